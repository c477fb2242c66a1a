# CMake toolchain file: cross-build schedhot for arm64 (aarch64) on an x86-64 Debian 12 host
# with Debian's cross toolchain (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu) against an
# arm64 sysroot of Debian packages. tests/vm/build-static-arm64.sh makes the sysroot
# (private apt configuration, dpkg-deb -x) and passes it:
#   cmake -DCMAKE_TOOLCHAIN_FILE=tests/vm/arm64-toolchain.cmake \
#         -DSCHEDHOT_ARM64_SYSROOT=/var/cache/schedhot-vm/arm64/sysroot -DSCHEDHOT_STATIC=ON ...
# CMakeLists.txt compiles the BPF objects with -D__TARGET_ARCH_arm64 (from
# CMAKE_SYSTEM_PROCESSOR) and the sysroot's headers.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# try_compile() projects read this file again: hand them the sysroot too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES SCHEDHOT_ARM64_SYSROOT)
if(NOT SCHEDHOT_ARM64_SYSROOT AND DEFINED ENV{SCHEDHOT_ARM64_SYSROOT})
  set(SCHEDHOT_ARM64_SYSROOT "$ENV{SCHEDHOT_ARM64_SYSROOT}")
endif()
if(NOT SCHEDHOT_ARM64_SYSROOT OR NOT EXISTS "${SCHEDHOT_ARM64_SYSROOT}/usr/include")
  message(FATAL_ERROR "arm64-toolchain.cmake: -DSCHEDHOT_ARM64_SYSROOT=DIR must name an arm64 sysroot "
                      "(tests/vm/build-static-arm64.sh makes one), got '${SCHEDHOT_ARM64_SYSROOT}'")
endif()
set(SCHEDHOT_ARM64_SYSROOT "${SCHEDHOT_ARM64_SYSROOT}" CACHE PATH "arm64 sysroot (Debian arm64 packages, dpkg-deb -x)")
set(CMAKE_SYSROOT "${SCHEDHOT_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH "${SCHEDHOT_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # clang, bpftool: the host's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the sysroot's .pc files only, and prefixes their paths with it.
set(ENV{PKG_CONFIG_LIBDIR} "${SCHEDHOT_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${SCHEDHOT_ARM64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${SCHEDHOT_ARM64_SYSROOT}")
