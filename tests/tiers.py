"""Which tests form the slow tier (`make test-slow`); conftest marks them `slow` at collection."""

from __future__ import annotations

# The slow tier (`make test-slow`, run by CI after `make test`): tests that each run Snakemake end
# to end several times (re-run exactness, stop-signal storms, the regression gate), sweep every
# real capture, or drive a browser. `make test` keeps the end-to-end runs of the bundled example,
# of each capture kind alone and of the capture double, and stays within its 5-minute budget. Entries are "file::test name" (a parametrised test: every case).
SLOW_TESTS = frozenset({
    "test_pipeline_rerun.py::test_dir_mode_reruns_exactly_the_changed_dispatches",
    "test_pipeline_rerun.py::test_cmd_mode_cached_captures_rerun_exactly_the_changed_dispatches",
    "test_pipeline_rerun.py::test_batch_mode_gate_sees_the_recaptured_numbers",
    "test_pipeline_rerun.py::test_threshold_overrides_rerun_the_stage_that_applies_them",
    "test_pipeline_e2e.py::test_use1_cmd_on_double_then_slurm_dry_run_and_rerun_boundary",
    "test_pipeline_e2e.py::test_batch_runs_in_one_invocation",
    "test_pipeline_e2e.py::test_bad_input_messages",
    "test_pipeline_e2e.py::test_use2_dir_on_real_capture_writes_nothing_there",
    "test_pipeline_e2e.py::test_decoder_missing_fails_with_install_instructions",
    "test_hostile_analyses.py::test_hostile_values_through_the_whole_analysis_path",
    "test_stop_signals.py::test_a_storm_of_stop_signals_ends_a_dir_run_and_releases_its_locks",
    "test_stop_signals.py::test_a_storm_during_a_capture_ends_the_run_and_the_capture",
    "test_regression_gate.py::test_planted_regression_fails_the_gate_and_keeps_the_report",
    "test_regression_gate.py::test_missing_baselined_kernel_fails_the_gate_unless_allowed",
    "test_regression_gate.py::test_neutral_change_passes_the_gate",
    "test_code_rerun.py::test_editing_code_reruns_exactly_the_jobs_that_run_it",
    "test_timeline.py::test_moe_reduce_capture_under_20_mb",
    "test_timeline.py::test_real_capture_decodes_with_every_check",
    "test_wavefile.py::test_every_shared_capture_parses_like_json",
    "test_faults_capture.py::test_hung_pmc_job_times_out_and_other_results_are_kept",
    "test_faults_capture.py::test_rerun_after_pmc_hang_captures_only_the_hung_job",
    "test_rerun_links.py::test_retargeted_symlink_and_mtime_preserving_edit_rerun",
    "test_plan_always_written.py::test_one_capture_failing_its_analysis_is_one_dropped_capture",
    "test_nothing_lost.py::test_rerun_resumes_without_recapturing_what_succeeded",
    "test_nothing_lost.py::test_dir_run_writes_nothing_under_the_input_folder",
    "test_reliability_pipeline.py::test_the_analysing_message_appears_once_per_run_not_per_job",
    "test_reliability_pipeline.py::"
    "test_stale_kept_hotspot_copies_are_removed_when_the_dispatch_set_changes",
    "test_capture_signals.py::test_stopping_snakemake_kills_the_capture",
    "test_report_labels.py::test_index_covers_every_run_under_reports_sorted",
    "test_pipeline_pmc_e2e.py::test_cmd_with_pmc_plans_captures_each_job_and_feeds_the_plan",
    "test_pipeline_pmc_e2e.py::test_dir_with_counter_csv_and_waves_only_where_wave_files_exist",
    "test_timeline_pipeline.py::test_dir_run_mixing_captures_with_and_without_wave_files",
    "test_compare_time_shared.py::test_calibration_pair_direction_and_verdict",
    "test_capture_warnings.py::test_buffer_full_through_the_pipeline_reaches_summary_and_plan",
    "test_outputs_confined.py::test_a_full_disk_is_one_error_line_and_the_failed_jobs_log_says_it",
})

