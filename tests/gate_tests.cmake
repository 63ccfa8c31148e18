# The gate's tests: statistics, the regression gate, frame exports, the gate command line, the
# proof on noise and the shipping strip. Included from tests/CMakeLists.txt.
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)

foreach(t stats gate frames_export critpath gate_noise)
  add_executable(test_${t} ${CMAKE_CURRENT_SOURCE_DIR}/test_${t}.c)
  target_link_libraries(test_${t} PRIVATE mprof_gate PkgConfig::CMOCKA)
  target_compile_options(test_${t} PRIVATE ${MPROF_WARNINGS})
  add_test(NAME test_${t} COMMAND test_${t})
  set_tests_properties(test_${t} PROPERTIES LABELS "unit;gate" TIMEOUT 60)
endforeach()
# Thousands of frames a run, many runs: minutes under the sanitizers on a busy machine.
set_tests_properties(test_gate_noise PROPERTIES TIMEOUT 240)

# The gate command line: exit codes, outputs and messages of the real binary.
add_test(NAME gate_cli
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/gate_cli.sh $<TARGET_FILE:mprof_tool>
          ${CMAKE_CURRENT_BINARY_DIR}/gate_cli)
set_tests_properties(gate_cli PROPERTIES LABELS "cli;gate" TIMEOUT 120)

add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/shipping ${CMAKE_CURRENT_BINARY_DIR}/shipping)

# The proof on noise: a small instrumented workload, captured in-process, gated ten times
# unchanged against its own baseline and ten times with a real 15 % slowdown in one zone.
add_executable(gate_workload ${CMAKE_CURRENT_SOURCE_DIR}/gate_workload.c)
target_compile_definitions(gate_workload PRIVATE MPROF_ENABLE)
target_link_libraries(gate_workload PRIVATE mprof_static mprof_export)
target_compile_options(gate_workload PRIVATE ${MPROF_WARNINGS})
# Capture, `mprof export --format frames` and `mprof gate` through the real binaries.
add_test(NAME frames_cli
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/frames_cli.sh $<TARGET_FILE:gate_workload>
          $<TARGET_FILE:mprof_tool> ${CMAKE_CURRENT_BINARY_DIR}/frames_cli)
set_tests_properties(frames_cli PROPERTIES LABELS "cli;gate" TIMEOUT 60)
# The sub-millisecond workload of `make proof` (bench/timedemo): capture, export and gate, no
# timing outcome.
if(MPROF_BUILD_BENCH)
  add_test(NAME timedemo_cli
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/timedemo_cli.sh $<TARGET_FILE:timedemo>
            $<TARGET_FILE:mprof_tool> ${CMAKE_CURRENT_BINARY_DIR}/timedemo_cli)
  set_tests_properties(timedemo_cli PROPERTIES LABELS "cli;gate" TIMEOUT 120)
endif()

# The proof on noise (bench/gate_noise.sh, bench/gate_proof.sh) and `mprof ci --self-test` are
# timing checks: a busy machine can change their outcome, so they run in `make proof`, not here.

# The gate's fuzz corpus replayed through the loader and comparison on every run.
add_executable(fuzz_gate_json_replay ${PROJECT_SOURCE_DIR}/fuzz/fuzz_gate_json.c
               ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
target_link_libraries(fuzz_gate_json_replay PRIVATE mprof_gate)
add_test(NAME fuzz_gate_json_replay
  COMMAND fuzz_gate_json_replay ${PROJECT_SOURCE_DIR}/fuzz/corpus/gate_json)
set_tests_properties(fuzz_gate_json_replay PROPERTIES LABELS "gate;fuzz")

add_executable(fuzz_frames_export_replay ${PROJECT_SOURCE_DIR}/fuzz/fuzz_frames_export.c
               ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
target_link_libraries(fuzz_frames_export_replay PRIVATE mprof_export)
add_test(NAME fuzz_frames_export_replay
  COMMAND fuzz_frames_export_replay ${PROJECT_SOURCE_DIR}/fuzz/corpus/frames_export
          ${PROJECT_SOURCE_DIR}/fuzz/corpus/reader)
set_tests_properties(fuzz_frames_export_replay PROPERTIES LABELS "gate;fuzz")

# `mprof ci` end to end (tests/ci_cli.sh): the layout, --runs, --baseline-cmd interleaving,
# --expect-exit, the report and the failure paths, with verdicts that do not depend on timing (a
# synthetic baseline no real run can match, a threshold no run can cross). It is the
# CI-integration contract check; the timing self-test (`mprof ci --self-test`) is in make proof.
add_test(NAME contract_ci_integration
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/ci_cli.sh $<TARGET_FILE:mprof_tool>
          ${CMAKE_CURRENT_BINARY_DIR}/ci_cli)
set_tests_properties(contract_ci_integration PROPERTIES LABELS "contract;cli;ci" TIMEOUT 180)
