# `cmake --install BUILD [--prefix PREFIX]`: the program, the result schema and the analysis
# scripts. The CUDA-free build (FLASHIO_CUDA=OFF) installs the analysis commands (analyze,
# report, compare, predict, export, merge, list, run --dry-run) on a machine without a GPU.
#   PREFIX/bin/flashio, PREFIX/bin/flashio_gbench (CUDA builds)
#   PREFIX/share/flashio/schema.json            results/schema.json, the record schema
#   PREFIX/share/flashio/scripts/*.py           plots, peers (give them --flashio PREFIX/bin/flashio)
#   PREFIX/share/doc/flashio/                   README.md, docs/
include(GNUInstallDirs)
# The installed programs keep the build's run-time search path of the libraries they link
# (cuBLAS and the CUDA runtime outside the system's default paths), as the build-tree ones do.
set_target_properties(flashio PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS flashio RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET flashio_gbench)
  set_target_properties(flashio_gbench PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS flashio_gbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES ${CMAKE_SOURCE_DIR}/results/schema.json DESTINATION ${CMAKE_INSTALL_DATADIR}/flashio)
# The scripts that read result files or measure peers; the build, test and reproduce scripts
# work on a checkout and stay there.
install(PROGRAMS
          ${CMAKE_SOURCE_DIR}/scripts/plot.py
          ${CMAKE_SOURCE_DIR}/scripts/peers_sdpa.py
          ${CMAKE_SOURCE_DIR}/scripts/ab_table.py
          ${CMAKE_SOURCE_DIR}/scripts/flash2_vs_sdpa.py
          ${CMAKE_SOURCE_DIR}/scripts/phases_table.py
          ${CMAKE_SOURCE_DIR}/scripts/ncu_crosscheck.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/flashio/scripts)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
