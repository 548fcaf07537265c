# Chooses CMAKE_CUDA_ARCHITECTURES when the user did not:
#   - the compute capability of the GPU present (read with nvidia-smi), or
#   - without a GPU, every architecture the suite supports: 75 (T4), 80 (A100),
#     86 (RTX 3090), 89 (L4/4090), 90 (H100/H200).
# Narrow it with -DCMAKE_CUDA_ARCHITECTURES=90 (CI builds one architecture).
if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
  return()
endif()
set(_flashio_all_archs "75;80;86;89;90")
find_program(_flashio_nvidia_smi nvidia-smi)
if(_flashio_nvidia_smi)
  execute_process(COMMAND ${_flashio_nvidia_smi} --query-gpu=compute_cap --format=csv,noheader
                  OUTPUT_VARIABLE _caps RESULT_VARIABLE _rc ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_rc EQUAL 0 AND _caps MATCHES "^[0-9]+\\.[0-9]+")
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" _first "${_caps}")
    string(REPLACE "." "" _arch "${_first}")
    set(CMAKE_CUDA_ARCHITECTURES "${_arch}" CACHE STRING "CUDA architectures (GPU present)")
    return()
  endif()
endif()
set(CMAKE_CUDA_ARCHITECTURES "${_flashio_all_archs}" CACHE STRING "CUDA architectures (no GPU found)")
