# SPDX-License-Identifier: Apache-2.0
# install.cmake — what `cmake --install build --prefix P` puts where
# (GNUInstallDirs), and the files that let others build against it:
#   P/include/servprof.h, servprof_version.h   the public API
#   P/lib/libservprof.so.0 (+ .so), libservprof.a
#   P/bin/servprof                              the CLI
#   P/lib/pkgconfig/servprof.pc                 pkg-config (shared library)
#   P/lib/pkgconfig/servprof-static.pc          pkg-config (libservprof.a)
#   P/lib/cmake/servprof/servprofConfig*.cmake  find_package(servprof)
#   P/share/doc/servprof/LICENSE
#
# Adding one more installed library (the drop-in libms_service_profiler.so,
# say) is one line in the CMakeLists.txt that defines the target:
#     servprof_install_library(ms_service_profiler)
# It lands in P/lib and in the exported set as servprof::ms_service_profiler.
# (The function is defined in the top-level CMakeLists.txt, before the
# subdirectories; this file runs after them and writes the export.)
include(CMakePackageConfigHelpers)

install(FILES ${CMAKE_SOURCE_DIR}/include/servprof.h ${SERVPROF_VERSION_HEADER}
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(TARGETS servprof_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

# pkg-config: the prefix is found from where the .pc file lies
# (${pcfiledir}), so the installed tree can be moved or installed with
# --prefix at install time and still describe itself correctly.
file(RELATIVE_PATH SERVPROF_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" SERVPROF_PC_UP "${SERVPROF_PC_UP}")
set(SERVPROF_PC_PREFIX "\${pcfiledir}/${SERVPROF_PC_UP}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/servprof.pc.in ${CMAKE_BINARY_DIR}/servprof.pc @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/cmake/servprof-static.pc.in ${CMAKE_BINARY_DIR}/servprof-static.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/servprof.pc ${CMAKE_BINARY_DIR}/servprof-static.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)

# find_package(servprof): targets, config and version files.
set(SERVPROF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/servprof)
install(EXPORT servprofTargets NAMESPACE servprof:: DESTINATION ${SERVPROF_CMAKE_DIR}
        COMPONENT dev)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/servprofConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/servprofConfig.cmake
                              INSTALL_DESTINATION ${SERVPROF_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/servprofConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/servprofConfig.cmake ${CMAKE_BINARY_DIR}/servprofConfigVersion.cmake
        DESTINATION ${SERVPROF_CMAKE_DIR} COMPONENT dev)
