# Cross build for aarch64 Linux with Debian's cross compilers
# (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu) against Debian's multiarch
# libraries (dpkg --add-architecture arm64; libcmocka-dev:arm64,
# libtracefs-dev:arm64, libtraceevent-dev:arm64). ctest runs the test
# executables under qemu-user (qemu-user or qemu-user-static).
#
#   cmake -S . -B build-arm64 \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(TL_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${TL_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${TL_CROSS_TRIPLE}-g++)

# find_library and find_package look in /usr/lib/aarch64-linux-gnu, where
# Debian puts the arm64 libraries; the host's own never match.
set(CMAKE_LIBRARY_ARCHITECTURE ${TL_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# pkg-config reads the arm64 .pc files only (and the architecture-free
# ones), never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${TL_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# The test executables run under qemu-user, on Debian's arm64 C library
# (libc6:arm64, which the arm64 -dev packages bring; libstdc++6:arm64 for
# the C++ test): its loader and its libc.so.6 come from one package. The
# cross C library in /usr/aarch64-linux-gnu is for linking only: its
# loader (qemu's -L /usr/aarch64-linux-gnu) finds the multiarch libc.so.6
# through the ld.so cache, a different build, and pthread_create then
# loops for ever walking the stack cache. -L / also keeps qemu from a
# prefix in /etc/qemu-binfmt.
find_program(TL_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(TL_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TL_QEMU_AARCH64} -L /)
endif()
