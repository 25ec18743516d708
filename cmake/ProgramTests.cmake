# Tests over every program (mbo_install_program), set up once all of them exist (src/, bench/):
# - daemon tests: each program's --help and --version (tests/daemon/test_command_line.cpp);
# - install tests (tests/runtime/test_install.cpp, test_systemd_unit.cpp): the fixture
#   "install.Setup" installs the build into build/test-install, and the tests check that tree:
#   programs, man pages, configuration, schemas, scenarios, docs, and the systemd unit.
get_property(_programs GLOBAL PROPERTY MBO_PROGRAMS)
get_property(_scripts GLOBAL PROPERTY MBO_SCRIPT_PROGRAMS)
set(_files)
foreach(_p IN LISTS _programs)
  list(APPEND _files "$<TARGET_FILE:${_p}>")
endforeach()
foreach(_p IN LISTS _scripts)
  get_property(_file GLOBAL PROPERTY MBO_SCRIPT_FILE_${_p})
  list(APPEND _files "${_file}")
endforeach()
# ':'-separated as PATH is (a ';' would split the definition into several)
list(JOIN _files ":" _files)
set(_all ${_programs} ${_scripts})
list(JOIN _all ":" _names)
add_dependencies(mbo_daemon_tests ${_programs})
target_compile_definitions(mbo_daemon_tests PRIVATE MBO_PROGRAM_FILES="${_files}"
                                                    MBO_PROJECT_VERSION="${PROJECT_VERSION}")

set(_prefix ${PROJECT_BINARY_DIR}/test-install)
set(_dirs ${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_SYSCONFDIR} ${CMAKE_INSTALL_DATADIR} ${CMAKE_INSTALL_DOCDIR}
          ${CMAKE_INSTALL_MANDIR} ${MBO_INSTALL_SYSTEMDUNITDIR})
add_test(NAME install.Setup
         COMMAND ${CMAKE_COMMAND} -DBINARY_DIR=${PROJECT_BINARY_DIR} -DPREFIX=${_prefix} "-DRELATIVE_DIRS=${_dirs}"
                 -P ${PROJECT_SOURCE_DIR}/cmake/TestInstall.cmake)
set_tests_properties(install.Setup PROPERTIES FIXTURES_SETUP mbo_installed TIMEOUT 300)
add_dependencies(mbo_install_tests ${_programs} mbo_man)
target_compile_definitions(mbo_install_tests PRIVATE
  MBO_TEST_PREFIX="${_prefix}"
  MBO_PROGRAMS="${_names}"
  MBO_PROJECT_VERSION="${PROJECT_VERSION}"
  MBO_CMAKE_COMMAND="${CMAKE_COMMAND}"
  MBO_INSTALL_BINDIR="${CMAKE_INSTALL_BINDIR}"
  MBO_INSTALL_SYSCONFDIR="${CMAKE_INSTALL_SYSCONFDIR}"
  MBO_INSTALL_DATADIR="${CMAKE_INSTALL_DATADIR}"
  MBO_INSTALL_DOCDIR="${CMAKE_INSTALL_DOCDIR}"
  MBO_INSTALL_MANDIR="${CMAKE_INSTALL_MANDIR}"
  MBO_INSTALL_UNITDIR="${MBO_INSTALL_SYSTEMDUNITDIR}")
