# CMake toolchain file, included by arm64-toolchain.cmake and ppc64le-toolchain.cmake: cross-build
# schedhot on an x86-64 Debian 12 host with Debian's cross toolchain for SCHEDHOT_CROSS_TRIPLE
# against a sysroot of Debian packages of that architecture, named by the cache variable
# SCHEDHOT_CROSS_SYSROOT_VAR names (tests/vm/build-static-cross.sh makes the sysroot with a
# private apt configuration and dpkg-deb -x, and passes it). The includer sets
# CMAKE_SYSTEM_PROCESSOR, SCHEDHOT_CROSS_TRIPLE and SCHEDHOT_CROSS_SYSROOT_VAR; CMakeLists.txt
# compiles the BPF objects with the __TARGET_ARCH_ of CMAKE_SYSTEM_PROCESSOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${SCHEDHOT_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${SCHEDHOT_CROSS_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${SCHEDHOT_CROSS_TRIPLE})

set(_var ${SCHEDHOT_CROSS_SYSROOT_VAR})
# try_compile() projects read this file again: hand them the sysroot too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ${_var})
if(NOT ${_var} AND DEFINED ENV{${_var}})
  set(${_var} "$ENV{${_var}}")
endif()
if(NOT ${_var} OR NOT EXISTS "${${_var}}/usr/include")
  message(FATAL_ERROR "${CMAKE_CURRENT_LIST_FILE}: -D${_var}=DIR must name a ${CMAKE_SYSTEM_PROCESSOR} sysroot "
                      "(tests/vm/build-static-cross.sh makes one), got '${${_var}}'")
endif()
set(${_var} "${${_var}}" CACHE PATH "${CMAKE_SYSTEM_PROCESSOR} sysroot (Debian packages, dpkg-deb -x)")
set(CMAKE_SYSROOT "${${_var}}")
set(CMAKE_FIND_ROOT_PATH "${${_var}}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # clang, bpftool: the host's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the sysroot's .pc files only, and prefixes their paths with it.
set(ENV{PKG_CONFIG_LIBDIR} "${${_var}}/usr/lib/${SCHEDHOT_CROSS_TRIPLE}/pkgconfig:${${_var}}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${${_var}}")
