# Finds the optional dependencies and turns TP_ENABLE_CUDA / TP_ENABLE_MPI
# (AUTO|ON|OFF) into TP_HAVE_CUDA / TP_HAVE_MPI. ON makes a missing dependency
# a configure error; AUTO prints one line saying what is skipped and why.

function(tp_resolve_option option have found why)
  string(TOUPPER "${${option}}" value)
  if(value STREQUAL "OFF")
    set(${have} OFF PARENT_SCOPE)
    message(STATUS "tp-opt: ${option}=OFF, skipped")
  elseif(found)
    set(${have} ON PARENT_SCOPE)
    message(STATUS "tp-opt: ${option}: enabled")
  elseif(value STREQUAL "ON")
    message(FATAL_ERROR "tp-opt: ${option}=ON but ${why}")
  else()
    set(${have} OFF PARENT_SCOPE)
    message(STATUS "tp-opt: ${option}=AUTO: skipped, ${why}")
  endif()
endfunction()

# CUDA toolkit (the driver API through its stub, cuBLAS and cuBLASLt 12 or
# newer for the 64-bit GEMM entry points) and NCCL, normally in
# /usr/local/cuda: libtprt_cuda.so (runtime/CMakeLists.txt) and the GPU
# lowering.
set(_tp_cuda_found OFF)
set(_tp_cuda_why "")
if(NOT TP_ENABLE_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  find_package(NCCL QUIET)
  if(NOT CUDAToolkit_FOUND)
    set(_tp_cuda_why "no CUDA toolkit found (set CUDAToolkit_ROOT)")
  elseif(CUDAToolkit_VERSION_MAJOR LESS 12)
    set(_tp_cuda_why "CUDA ${CUDAToolkit_VERSION} is older than 12")
  elseif(NOT TARGET CUDA::cublas OR NOT TARGET CUDA::cublasLt)
    set(_tp_cuda_why "CUDA ${CUDAToolkit_VERSION} has no cuBLAS")
  elseif(NOT TARGET CUDA::cuda_driver)
    set(_tp_cuda_why "CUDA ${CUDAToolkit_VERSION} has no driver stub (libcuda.so)")
  elseif(NOT NCCL_FOUND)
    set(_tp_cuda_why "CUDA ${CUDAToolkit_VERSION} found but no NCCL (set NCCL_ROOT)")
  else()
    set(_tp_cuda_found ON)
  endif()
endif()
tp_resolve_option(TP_ENABLE_CUDA TP_HAVE_CUDA "${_tp_cuda_found}" "${_tp_cuda_why}")
if(TP_HAVE_CUDA)
  message(STATUS "tp-opt: CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_LIBRARY_DIR}, NCCL ${NCCL_VERSION} (${NCCL_LIBRARY})")
  find_program(TP_PTXAS ptxas HINTS ${CUDAToolkit_BIN_DIR})
endif()

# Open MPI.
set(_tp_mpi_found OFF)
if(NOT TP_ENABLE_MPI STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    set(_tp_mpi_found ON)
  endif()
endif()
tp_resolve_option(TP_ENABLE_MPI TP_HAVE_MPI "${_tp_mpi_found}"
                  "no MPI found (run scripts/setup.sh)")
if(TP_HAVE_MPI)
  # The launcher FindMPI paired with the library (/usr/bin/mpiexec on Debian).
  # Not find_program(... HINTS ${MPI_HOME}/bin): with MPI_HOME unset that hint
  # is /bin, and Open MPI started as /bin/mpirun takes "/" for its --prefix
  # and refuses to start.
  set(TP_MPIEXEC "${MPIEXEC_EXECUTABLE}")
endif()
