# blocktune_test(<name> SOURCES <files...> LIBS <targets...> [LABELS <labels...>]
#                [COST <n>])
# COST: ctest starts tests of a higher cost first; the long ones (ptxas
# sweeps, compiled headers) get one so that a clean CI run, which has no
# timings of an earlier run, does not end with them alone.
# One gtest executable per test file, registered with ctest through
# gtest_discover_tests so each TEST shows up on its own.
function(blocktune_test name)
  cmake_parse_arguments(ARG "" "COST" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  # A test's own file needs neither -O2 nor full debug information: at -O1
  # with line tables only (backtraces keep file:line) it compiles in about
  # 55% of the time (campaign_test.cc: 27.5 s -> 15.3 s here), and the test
  # files are most of a clean build. The code under test keeps the build's
  # flags (it is in the libraries). GPU tests keep -O2: their float64
  # references run in the test's own file, on the lent GPU host's time.
  if(NOT "gpu" IN_LIST ARG_LABELS)
    target_compile_options(${name} PRIVATE "$<$<CONFIG:RelWithDebInfo>:-O1;-g1>")
  endif()
  set(props "")
  if(ARG_LABELS)
    list(APPEND props LABELS "${ARG_LABELS}")
  endif()
  if(ARG_COST)
    list(APPEND props COST ${ARG_COST})
  endif()
  if(props)
    set(props PROPERTIES ${props})
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 ${props})
endfunction()
