# CMake toolchain file: cross-build schedhot for ppc64le (powerpc64le) on an x86-64 Debian 12
# host with Debian's cross toolchain (g++-powerpc64le-linux-gnu) against a ppc64el sysroot of
# Debian packages (cross-toolchain.cmake). tests/vm/build-static-cross.sh ppc64el makes the
# sysroot and passes it:
#   cmake -DCMAKE_TOOLCHAIN_FILE=tests/vm/ppc64le-toolchain.cmake \
#         -DSCHEDHOT_PPC64LE_SYSROOT=/var/cache/schedhot-vm/ppc64el/sysroot -DSCHEDHOT_STATIC=ON ...
set(CMAKE_SYSTEM_PROCESSOR ppc64le)
set(SCHEDHOT_CROSS_TRIPLE powerpc64le-linux-gnu)
set(SCHEDHOT_CROSS_SYSROOT_VAR SCHEDHOT_PPC64LE_SYSROOT)
include(${CMAKE_CURRENT_LIST_DIR}/cross-toolchain.cmake)
