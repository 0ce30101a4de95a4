# Runs one `posenc validate` command and checks what a user would see (ctest label `validate`):
#   -DCOMMAND="posenc;validate;..."  the command, as a list
#   -DSTATUS=N                        the exit status it must return
#   -DEXPECT="regex;regex..."         each must match its output (stdout and stderr)
#   -DREJECT="regex;regex..."         none may match it
#   -DENV="NAME=value;..."            the command's environment, added to ctest's
#   -DNO_PROCESS=name                 afterwards no process may be named so (/proc/*/comm)
#   -DREPLAY=ON                       also run the first replay line printed; it must fail again
#                                     (status 1) on one case, naming the same property
if(ENV)
  set(COMMAND ${CMAKE_COMMAND} -E env ${ENV} ${COMMAND})
endif()
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(out "${out}${err}")
foreach(regex ${REJECT})
  if(out MATCHES "${regex}")
    message(FATAL_ERROR "output matches '${regex}':\n${out}")
  endif()
endforeach()
if(NO_PROCESS)
  file(GLOB comms /proc/[0-9]*/comm)
  foreach(comm ${comms})
    file(READ ${comm} name)  # a process may be gone by now: then the read fails quietly
    if(name STREQUAL "${NO_PROCESS}\n")
      message(FATAL_ERROR "a process named ${NO_PROCESS} is still running (${comm}):\n${out}")
    endif()
  endforeach()
endif()
if(NOT status STREQUAL STATUS)
  message(FATAL_ERROR "exit status ${status}, expected ${STATUS}; output:\n${out}")
endif()
foreach(regex ${EXPECT})
  if(NOT out MATCHES "${regex}")
    message(FATAL_ERROR "output does not match '${regex}':\n${out}")
  endif()
endforeach()
if(REPLAY)
  if(NOT out MATCHES "\n([a-z_0-9.]+) FAILED for [^\n]*\n")
    message(FATAL_ERROR "no failure to replay in:\n${out}")
  endif()
  set(property ${CMAKE_MATCH_1})
  string(REGEX MATCH "\nreplay: ([^\n]*)" line "${out}")
  set(replay ${CMAKE_MATCH_1})
  execute_process(COMMAND sh -c "${replay}" RESULT_VARIABLE status OUTPUT_VARIABLE again
                  ERROR_VARIABLE err)
  if(NOT status EQUAL 1 OR NOT again MATCHES "${property} FAILED for [^\n]* on case 1 ")
    message(FATAL_ERROR "replay `${replay}` exited ${status}, expected 1 naming ${property}:\n"
                        "${again}${err}")
  endif()
  message(STATUS "replayed: ${replay}")
endif()
message(STATUS "${out}")
