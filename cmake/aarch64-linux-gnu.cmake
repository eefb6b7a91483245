# Cross build for 64-bit Arm Linux (Graviton, Grace, Ampere) with Debian's g++-aarch64-linux-gnu, its
# programs run by qemu-aarch64 (qemu-user) on the build machine: the numerics and their unit tests only
# (-DICL_NUMERICS_ONLY=ON: no MPI, HDF5 or Boost for the target), GoogleTest built from its sources
# (-DICL_GTEST_SOURCE_DIR=/usr/src/googletest/googletest).  tests/test_isa.sh aarch64 runs it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The target's libraries from its sysroot only; Eigen, header-only, from the host (/usr/include/eigen3).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# Test programs (gtest_discover_tests, ctest) run under qemu, the target's loader and libraries from the sysroot.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
