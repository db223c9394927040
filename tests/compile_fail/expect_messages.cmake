# SPDX-License-Identifier: Apache-2.0
# cmake -DBUILD=<build folder> -DTARGET=<target> -DSOURCE=<file> -P expect_messages.cmake
# Builds TARGET, which must fail, and checks that its output holds every
# message SOURCE announces on its `// expect: <message>` lines, naming the
# missing ones.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} --target ${TARGET}
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(status EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled, but every case in ${SOURCE} must be rejected")
endif()
# One line of output per diagnostic: compilers may wrap long messages.
string(REGEX REPLACE "[\r\n]+ *" " " flat "${output}")
file(STRINGS ${SOURCE} expectations REGEX "^// expect: ")
list(LENGTH expectations count)
if(count EQUAL 0)
  message(FATAL_ERROR "${SOURCE} has no `// expect:` lines")
endif()
set(missing "")
foreach(line IN LISTS expectations)
  string(REGEX REPLACE "^// expect: " "" expected "${line}")
  string(FIND "${flat}" "${expected}" at)
  if(at EQUAL -1)
    string(APPEND missing "\n  ${expected}")
  endif()
endforeach()
if(NOT missing STREQUAL "")
  string(LENGTH "${output}" length)
  if(length GREATER 6000)
    string(SUBSTRING "${output}" 0 6000 output)
  endif()
  message(FATAL_ERROR "${TARGET}: these expected messages are missing:${missing}\n"
                      "The compiler said:\n${output}")
endif()
message(STATUS "${TARGET}: all ${count} expected messages, as the build failed")
