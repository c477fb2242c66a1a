# CMake toolchain file: cross-build schedhot for arm64 (aarch64) on an x86-64 Debian 12 host
# with Debian's cross toolchain (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu) against an
# arm64 sysroot of Debian packages (cross-toolchain.cmake). tests/vm/build-static-cross.sh
# arm64 makes the sysroot and passes it:
#   cmake -DCMAKE_TOOLCHAIN_FILE=tests/vm/arm64-toolchain.cmake \
#         -DSCHEDHOT_ARM64_SYSROOT=/var/cache/schedhot-vm/arm64/sysroot -DSCHEDHOT_STATIC=ON ...
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(SCHEDHOT_CROSS_TRIPLE aarch64-linux-gnu)
set(SCHEDHOT_CROSS_SYSROOT_VAR SCHEDHOT_ARM64_SYSROOT)
include(${CMAKE_CURRENT_LIST_DIR}/cross-toolchain.cmake)
