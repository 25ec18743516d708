# What `cmake --install` puts where (GNU install directories, GNUInstallDirs):
#   bin/                                the programs (mbo_install_program)
#   share/man/man1/                     their man pages (man/CMakeLists.txt)
#   etc/mbobserver/                     the configuration to edit (config/; an edited file is kept)
#   share/mbobserver/config/            the shipped configuration, vehicles, models and CAN files
#   share/mbobserver/scenarios/         the scenarios, which name ../config/... files
#   share/mbobserver/schemas/           the datagrams' and the summary's JSON Schemas
#   share/doc/mbobserver/               docs/*.md, README, CHANGELOG, CONTRIBUTING, LICENSE
#   lib/systemd/system/                 mbobserver.service, written for this prefix
# The unit and etc/ are placed by an install-time script (cmake/install_config_and_unit.cmake.in)
# so that they follow `cmake --install --prefix DIR` and the /etc rule of GNUInstallDirs.

set(MBO_INSTALL_SYSTEMDUNITDIR "lib/systemd/system"
    CACHE STRING "systemd system unit directory, relative to the install prefix or absolute")

# A program: installed to bin/, given a man page (man/<name>.h2m.in) and the --version test.
function(mbo_install_program target)
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  set_property(GLOBAL APPEND PROPERTY MBO_PROGRAMS ${target})
endfunction()

# A program that is a script (mbobserver-fleet): `file` is its build-tree copy, which the man
# page and the command-line tests run; its own install() rule puts it in bin/. The further
# arguments are the sources its --help comes from (the man page is made again when they change).
function(mbo_script_program name file)
  set_property(GLOBAL APPEND PROPERTY MBO_SCRIPT_PROGRAMS ${name})
  set_property(GLOBAL PROPERTY MBO_SCRIPT_FILE_${name} ${file})
  set_property(GLOBAL PROPERTY MBO_SCRIPT_SOURCES_${name} ${ARGN})
endfunction()

install(DIRECTORY config/ DESTINATION ${CMAKE_INSTALL_DATADIR}/mbobserver/config)
install(DIRECTORY scenarios/ DESTINATION ${CMAKE_INSTALL_DATADIR}/mbobserver/scenarios)
install(FILES docs/estimate.schema.json docs/status.schema.json docs/summary.schema.json DESTINATION ${CMAKE_INSTALL_DATADIR}/mbobserver/schemas)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")
install(FILES README.md CHANGELOG.md CONTRIBUTING.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

configure_file(cmake/install_config_and_unit.cmake.in ${PROJECT_BINARY_DIR}/install_config_and_unit.cmake @ONLY)
install(SCRIPT ${PROJECT_BINARY_DIR}/install_config_and_unit.cmake)
