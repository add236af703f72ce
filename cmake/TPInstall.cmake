# `cmake --install BUILD --prefix PREFIX`: everything an embedder needs
# (docs/embedding.md), relocatable (no path of the build or of PREFIX is
# written into what is installed; programs and libraries find each other
# through $ORIGIN).
#
#   bin/           tp-opt tp-gen tp-run tp-runner
#   lib/           libTPDialect.a ... libTPInit.a  the compiler, static
#                  libTPCompiler.so                the same, one shared library
#                  libTPCAPI.so                    the C API (include/tp-c)
#                  TPDialectPlugin.so TPPassPlugin.so   plugins for mlir-opt
#                  libtprt.so                      the runtime
#   include/       tp/ (headers, ODS .td, generated .h.inc), tp-c/, tprt/
#   lib/cmake/tp/  TPConfig.cmake: find_package(TP CONFIG), targets TP::*
include(CMakePackageConfigHelpers)

set(TP_INSTALL_CMAKEDIR lib/cmake/tp)

install(TARGETS TPHeaders ${TP_COMPILER_LIBS} TPCompiler TPCAPI
                TPDialectPlugin TPPassPlugin
        EXPORT TPTargets
        ARCHIVE DESTINATION lib
        LIBRARY DESTINATION lib
        RUNTIME DESTINATION bin)
install(TARGETS tp-opt tp-gen tp-run
        EXPORT TPTargets
        RUNTIME DESTINATION bin)

install(DIRECTORY include/tp include/tp-c
        DESTINATION include
        FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${CMAKE_BINARY_DIR}/include/tp
        DESTINATION include
        FILES_MATCHING PATTERN "*.h.inc"
        PATTERN "CMakeFiles" EXCLUDE)

install(EXPORT TPTargets
        NAMESPACE TP::
        DESTINATION ${TP_INSTALL_CMAKEDIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/TPConfig.cmake.in
  ${CMAKE_BINARY_DIR}/lib/cmake/tp/TPConfig.cmake
  INSTALL_DESTINATION ${TP_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/lib/cmake/tp/TPConfigVersion.cmake
  VERSION ${TP_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/lib/cmake/tp/TPConfig.cmake
              ${CMAKE_BINARY_DIR}/lib/cmake/tp/TPConfigVersion.cmake
        DESTINATION ${TP_INSTALL_CMAKEDIR})
