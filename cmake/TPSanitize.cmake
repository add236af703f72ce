# TP_SANITIZE=address,undefined (any -fsanitize= list): every target of the
# project is built with the sanitizers, frame pointers and no recovery, so
# a report fails the test that caused it. libMLIR itself is not
# instrumented. Run the suite with scripts/test-sanitized.sh (it sets the
# sanitizer options and the leak suppressions of utils/lsan.supp).
set(TP_SANITIZE "" CACHE STRING
    "Sanitizers for every target, e.g. address,undefined (empty: none)")
if(TP_SANITIZE)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
    check_cxx_source_compiles(
      "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }"
      TP_HAVE_LIBFUZZER)
    unset(CMAKE_REQUIRED_FLAGS)
  endif()
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
  message(STATUS "tp-opt: sanitizers: ${TP_SANITIZE}")
endif()
