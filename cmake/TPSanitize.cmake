# TP_SANITIZE=address,undefined (any -fsanitize= list): every target of the
# project is built with the sanitizers, frame pointers and no recovery, so
# a report fails the test that caused it. libMLIR itself is not
# instrumented. Run the suite with scripts/test-sanitized.sh (it sets the
# sanitizer options and the leak suppressions of utils/lsan.supp).
set(TP_SANITIZE "" CACHE STRING
    "Sanitizers for every target, e.g. address,undefined (empty: none)")
# TP_HAVE_LIBFUZZER: clang with its fuzzer runtime (libclang-rt-22-dev);
# tools/tp-fuzz is built when it is there (TP_BUILD_FUZZER).
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
  check_cxx_source_compiles(
    "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }"
    TP_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
endif()

if(TP_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang|GNU")
    message(FATAL_ERROR "TP_SANITIZE needs clang or gcc")
  endif()
  set(TP_SANITIZE_FLAGS -fsanitize=${TP_SANITIZE} -fno-sanitize-recover=all
      -fno-omit-frame-pointer)
  # With clang, also the coverage instrumentation libFuzzer steers by, so
  # that tp-fuzz in this build sees every branch of the compiler libraries
  # (bench/fuzz.sh uses this build).
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND TP_HAVE_LIBFUZZER)
    list(APPEND TP_SANITIZE_FLAGS -fsanitize=fuzzer-no-link)
  endif()
  add_compile_options(${TP_SANITIZE_FLAGS})
  add_link_options(-fsanitize=${TP_SANITIZE})
  # The sanitizer runtimes are linked into executables only; shared
  # libraries leave their __asan_*/__ubsan_* references to the program that
  # loads them. LLVM's flags and our libraries ask for -z defs /
  # --no-undefined: the last -z undefs on the line lifts that here.
  foreach(lang C CXX)
    foreach(kind SHARED_LIBRARY SHARED_MODULE)
      set(CMAKE_${lang}_CREATE_${kind}
          "${CMAKE_${lang}_CREATE_${kind}} -Wl,-z,undefs")
    endforeach()
  endforeach()
  message(STATUS "tp-opt: sanitizers: ${TP_SANITIZE}")
endif()
