# Generates one .cu per (element type, head dim) of the flash2 kernels (from
# kernels/flash2/flash2_fwd_instantiate.cu.in), of the block-sparse flash2 kernels (d 64 and
# 128 only, kernels/blocksparse/blocksparse_instantiate.cu.in) and of the flash1 kernels (from
# kernels/flash1/flash1_instantiate.cu.in), so instantiations build in parallel.
set(FLASH2_INSTANTIATION_SOURCES ${CMAKE_SOURCE_DIR}/kernels/flash2/flash2_fwd_dispatch.cu
                                 ${CMAKE_SOURCE_DIR}/kernels/blocksparse/blocksparse_dispatch.cu
                                 ${CMAKE_SOURCE_DIR}/kernels/flash1/flash1_dispatch.cu)
foreach(dtype fp16 bf16)
  if(dtype STREQUAL "fp16")
    set(ELEMENT half)
  else()
    set(ELEMENT __nv_bfloat16)
  endif()
  foreach(HEAD_DIM 32 64 96 128 256)
    set(out ${CMAKE_BINARY_DIR}/generated/kernels/flash2_fwd_${dtype}_d${HEAD_DIM}.cu)
    configure_file(${CMAKE_SOURCE_DIR}/kernels/flash2/flash2_fwd_instantiate.cu.in ${out} @ONLY)
    list(APPEND FLASH2_INSTANTIATION_SOURCES ${out})
    if(HEAD_DIM EQUAL 64 OR HEAD_DIM EQUAL 128)  # blocksparse_flash: kSparse kernels, two head dims
      set(outs ${CMAKE_BINARY_DIR}/generated/kernels/blocksparse_${dtype}_d${HEAD_DIM}.cu)
      configure_file(${CMAKE_SOURCE_DIR}/kernels/blocksparse/blocksparse_instantiate.cu.in ${outs} @ONLY)
      list(APPEND FLASH2_INSTANTIATION_SOURCES ${outs})
    endif()
    if(NOT HEAD_DIM EQUAL 256)
      set(out1 ${CMAKE_BINARY_DIR}/generated/kernels/flash1_${dtype}_d${HEAD_DIM}.cu)
      configure_file(${CMAKE_SOURCE_DIR}/kernels/flash1/flash1_instantiate.cu.in ${out1} @ONLY)
      list(APPEND FLASH2_INSTANTIATION_SOURCES ${out1})
    endif()
  endforeach()
endforeach()
