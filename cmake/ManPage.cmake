# cmake -DHELP2MAN=... -DPROGRAM=... -DNAME=... -DINCLUDE=... -DOUTPUT=... -DVERSION=... -P ManPage.cmake
# One man page from the program's --help and --version (help2man) and the hand-written
# sections of INCLUDE (NAME, DESCRIPTION, SEE ALSO, ...). A program that cannot run here (a
# cross build, a sanitizer that refuses the machine) does not stop the build: its page is then
# written from INCLUDE alone, with a warning, and says that the options are in --help.
foreach(v HELP2MAN PROGRAM NAME INCLUDE OUTPUT VERSION)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "ManPage.cmake: ${v} is not set")
  endif()
endforeach()

set(ran FALSE)
if(NOT CROSSCOMPILING)
  # help2man reads the date from SOURCE_DATE_EPOCH when set (reproducible builds).
  execute_process(
    COMMAND "${HELP2MAN}" --no-info --section=1 --manual=mbobserver --include=${INCLUDE} --output=${OUTPUT}.tmp
            "${PROGRAM}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
    set(ran TRUE)
  else()
    file(REMOVE "${OUTPUT}.tmp")
    string(STRIP "${err}${out}" why)
    message(WARNING "${NAME}: help2man could not run it (${why}); its man page is written without the options")
  endif()
else()
  message(WARNING "${NAME}: a cross build cannot run it; its man page is written without the options")
endif()

if(NOT ran)
  # The include file's "[SECTION]" lines (upper case, as help2man's) become ".SH SECTION";
  # everything else in it is roff already.
  file(READ "${INCLUDE}" text)
  string(REGEX REPLACE "(^|\n)\\[([A-Z][A-Z ]*)\\]" "\\1.SH \\2" text "${text}")
  string(REPLACE ".SH DESCRIPTION\n" ".SH DESCRIPTION\nThe options are printed by\n.B ${NAME} \\-\\-help\\fR.\n.PP\n" text
                 "${text}")
  string(TOUPPER "${NAME}" upper)
  file(WRITE "${OUTPUT}" ".TH ${upper} \"1\" \"\" \"mbobserver ${VERSION}\" \"mbobserver\"\n${text}")
endif()
