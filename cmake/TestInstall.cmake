# cmake -DBINARY_DIR=... -DPREFIX=... -DRELATIVE_DIRS="bin;etc;..." -P TestInstall.cmake
# The install tests' fixture (ctest "install.Setup"): a fresh `cmake --install BINARY_DIR
# --prefix PREFIX`. A directory configured absolute (e.g. -DCMAKE_INSTALL_SYSCONFDIR=/etc) would
# be written outside PREFIX, and so would etc/ under a prefix in /opt (GNUInstallDirs puts it in
# /etc/opt/...): then nothing is installed and the tests skip.
if(PREFIX MATCHES "^/opt/")
  message(STATUS "${PREFIX} is under /opt: its etc/ would be /etc/opt/...; not installing")
  return()
endif()
foreach(dir IN LISTS RELATIVE_DIRS)
  if(IS_ABSOLUTE "${dir}")
    message(STATUS "install directory ${dir} is absolute: not installing into ${PREFIX}")
    return()
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BINARY_DIR}" --prefix "${PREFIX}"
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
message(STATUS "installed into ${PREFIX}")
