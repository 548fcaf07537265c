# Installs the build into a fresh prefix and runs the installed program: `flashio list` must list
# the methods, the schema and the scripts must be there. Run by CTest (install_into_a_prefix).
# -DBUILD_DIR=... -DPREFIX=...
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}): ${err}")
endif()
foreach(f bin/flashio share/flashio/schema.json share/flashio/scripts/plot.py share/flashio/scripts/peers_sdpa.py
          share/doc/flashio/README.md)
  if(NOT EXISTS "${PREFIX}/${f}")
    message(FATAL_ERROR "not installed: ${PREFIX}/${f}")
  endif()
endforeach()
execute_process(COMMAND "${PREFIX}/bin/flashio" list RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                WORKING_DIRECTORY "${PREFIX}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "flash2 +\\[" OR NOT out MATCHES "standard +\\[")
  message(FATAL_ERROR "installed flashio list failed (${rc}): ${out}${err}")
endif()
execute_process(COMMAND "${PREFIX}/bin/flashio" predict --gpu h100-pcie -n 4096 RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err WORKING_DIRECTORY "${PREFIX}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "NVIDIA H100 PCIe")
  message(FATAL_ERROR "installed flashio predict failed (${rc}): ${out}${err}")
endif()
file(REMOVE_RECURSE "${PREFIX}")
message(STATUS "installed into ${PREFIX}: flashio list and predict ran")
