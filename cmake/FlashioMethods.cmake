# flashio_add_method(NAME FOLDER): registers the method NAME, whose code lives in FOLDER
# (kernels/<x> or baselines/<x>, relative to the source root). The folder's own CMakeLists.txt
# defines the target flashio_<folder name> with the method's description (make_NAME(), plain
# C++) and, when FLASHIO_CUDA is on, its launch side (plan_NAME()). A folder holding several
# methods is added once. flashio_write_method_registry() then writes the registry's source
# from these lines, in their order.
function(flashio_add_method name folder)
  get_filename_component(folder_name ${folder} NAME)
  set(target flashio_${folder_name})
  get_property(folders GLOBAL PROPERTY FLASHIO_METHOD_FOLDERS)
  if(NOT folder IN_LIST folders)
    add_subdirectory(${CMAKE_SOURCE_DIR}/${folder} ${CMAKE_BINARY_DIR}/${folder})
    set_property(GLOBAL APPEND PROPERTY FLASHIO_METHOD_FOLDERS ${folder})
    set_property(GLOBAL APPEND PROPERTY FLASHIO_METHOD_TARGETS ${target})
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "flashio_add_method(${name} ${folder}): ${folder}/CMakeLists.txt defines no target ${target}")
  endif()
  set_property(GLOBAL APPEND PROPERTY FLASHIO_METHODS ${name})
endfunction()

# Writes ${out} from bench/registry/builtin_registry.cpp.in: declarations and one r.add() per
# registered method; the launch side is null in a build without CUDA.
function(flashio_write_method_registry out)
  get_property(methods GLOBAL PROPERTY FLASHIO_METHODS)
  set(FLASHIO_METHOD_DECLARATIONS "")
  set(FLASHIO_METHOD_REGISTRATIONS "")
  foreach(m IN LISTS methods)
    string(APPEND FLASHIO_METHOD_DECLARATIONS "std::unique_ptr<Method> make_${m}();\n")
    if(FLASHIO_CUDA)
      string(APPEND FLASHIO_METHOD_DECLARATIONS
             "std::unique_ptr<Plan> plan_${m}(const Problem&, Pass, const DeviceInfo&, DeviceAllocator&);\n")
      string(APPEND FLASHIO_METHOD_REGISTRATIONS "    r.add(make_${m}(), &plan_${m});\n")
    else()
      string(APPEND FLASHIO_METHOD_REGISTRATIONS "    r.add(make_${m}(), nullptr);\n")
    endif()
  endforeach()
  configure_file(${CMAKE_SOURCE_DIR}/bench/registry/builtin_registry.cpp.in ${out} @ONLY)
endfunction()

# flashio_head_dims(HEADER MACRO OUT): the head dims of `#define MACRO(X) X(32) X(64) ...` in
# HEADER, the one list a method's configs header writes, for its instantiations.
function(flashio_head_dims header macro out)
  file(STRINGS ${header} line REGEX "^#define ${macro}\\(X\\)")
  if(NOT line)
    message(FATAL_ERROR "${header} has no '#define ${macro}(X) X(..) ...' line")
  endif()
  string(REGEX MATCHALL "X\\(([0-9]+)\\)" items "${line}")
  set(dims "")
  foreach(item IN LISTS items)
    string(REGEX REPLACE "X\\(([0-9]+)\\)" "\\1" d "${item}")
    list(APPEND dims ${d})
  endforeach()
  set(${out} ${dims} PARENT_SCOPE)
endfunction()

# flashio_instantiate(TEMPLATE PREFIX OUT HEAD_DIMS...): one .cu per (element type, head dim)
# from TEMPLATE (@ELEMENT@, @HEAD_DIM@), named PREFIX_<fp16|bf16>_d<dim>.cu in the build tree,
# so instantiations compile in parallel; appends their paths to OUT.
function(flashio_instantiate template prefix out)
  set(sources ${${out}})
  foreach(dtype fp16 bf16)
    if(dtype STREQUAL "fp16")
      set(ELEMENT half)
    else()
      set(ELEMENT __nv_bfloat16)
    endif()
    foreach(HEAD_DIM IN LISTS ARGN)
      set(file ${CMAKE_BINARY_DIR}/generated/kernels/${prefix}_${dtype}_d${HEAD_DIM}.cu)
      configure_file(${template} ${file} @ONLY)
      list(APPEND sources ${file})
    endforeach()
  endforeach()
  set(${out} ${sources} PARENT_SCOPE)
endfunction()

# flashio_hopper_kernels(OUT): ON when this build compiles Hopper-only kernels (wgmma, TMA,
# setmaxnreg: sm_90a) — a CUDA build whose CMAKE_CUDA_ARCHITECTURES name 90 —, else OFF.
function(flashio_hopper_kernels out)
  set(hopper OFF)
  if(FLASHIO_CUDA)
    foreach(arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
      if(arch MATCHES "^90")
        set(hopper ON)
      endif()
    endforeach()
  endif()
  set(${out} ${hopper} PARENT_SCOPE)
endfunction()

# flashio_cuda_target(TARGET): the device-code flags every CUDA library of flashio compiles with.
function(flashio_cuda_target target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${FLASHIO_CUDA_FLAGS}>)
endfunction()

# flashio_add_kernels(TARGET HEADER MACRO TEMPLATE PREFIX SOURCES...): a method's CUDA half —
# one instantiation of TEMPLATE per (element type, head dim) of HEADER's `#define MACRO(X)` list,
# and SOURCES (its plan and dispatch) — added to TARGET with the suite's device flags.
function(flashio_add_kernels target header macro template prefix)
  flashio_head_dims(${header} ${macro} dims)
  set(instances "")
  flashio_instantiate(${template} ${prefix} instances ${dims})
  target_sources(${target} PRIVATE ${ARGN} ${instances})
  flashio_cuda_target(${target})
  target_link_libraries(${target} PUBLIC flashio_cuda)
endfunction()
