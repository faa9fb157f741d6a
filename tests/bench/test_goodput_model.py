"""bench/goodput_model.py's arithmetic on known answers: ETTR without failures, a failure a day of 864 s, Young/Daly's
interval, monotone in job size, orderings between the systems, the flags, and the program's lines.

Runs under pytest, or alone (`python3 test_goodput_model.py`: every test_ function, exit 1 on the first failure),
which is how the bench suite runs it (tests/bench/meson.build)."""
import contextlib
import io
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "bench"))
import goodput_model as gm  # noqa: E402

SIZES = [1000, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 100000]


def defaults(**changes):
    p = dict(gm.DEFAULTS)
    p.update(changes)
    return p


def run(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert gm.main(list(argv)) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def close(a, b, tol=1e-12):
    return abs(a - b) <= tol


def test_no_failures_leave_one_minus_the_steady_overhead():
    for overhead in (0.0, 0.007, 0.25):
        assert close(gm.ettr(0.0, 12345.0, overhead), 1.0 - overhead)


def test_one_failure_a_day_costing_864_s_takes_exactly_one_percent():
    assert close(gm.ettr(1.0 / 86400, 864.0, 0.0), 0.99)
    # with a steady overhead the failure takes 1% of what is left
    assert close(gm.ettr(1.0 / 86400, 864.0, 0.1), 0.99 * 0.9)


def test_failures_that_take_all_the_time_leave_zero_not_less():
    assert gm.ettr(1.0 / 100, 500.0, 0.0) == 0.0


def test_young_daly_interval_on_a_known_case():
    # save 50 s, MTBF 10,000 s: sqrt(2 * 50 * 10,000) = 1,000 s
    assert close(gm.young_daly_interval_s(50.0, 10000.0), 1000.0)
    # and the model uses it: save_s given, interval derived from the job's MTBF
    p = defaults(cr_save_s=50.0)
    rate = gm.failures_per_s(16384, p["mtbf_per_gpu_hours"])
    _, parts, steady, interval, save = gm.checkpoint_restart_costs(16384, 1.0 / rate, p)
    assert save == 50.0 and close(interval, math.sqrt(2 * 50.0 / rate), 1e-9)
    assert close(parts["redo_s"], interval / 2) and close(steady, 50.0 / (interval + 50.0))


def test_a_given_interval_replaces_young_daly():
    p = defaults(cr_interval_s=1800.0)
    _, parts, _, interval, _ = gm.checkpoint_restart_costs(16384, 10000.0, p)
    assert interval == 1800.0 and parts["redo_s"] == 900.0


def test_the_failure_rate_is_linear_in_gpus_and_matches_llama3():
    p = defaults()
    # 419 unexpected interruptions in 54 days on 16,384 GPUs
    assert close(gm.failures_per_s(16384, p["mtbf_per_gpu_hours"]) * 54 * 86400, 419.0, 1e-9)
    assert close(gm.failures_per_s(32768, 7.0), 2 * gm.failures_per_s(16384, 7.0))


def test_ettr_never_rises_with_job_size():
    for p in (defaults(), defaults(gpu_failure_loses=1), defaults(shoal_ckpt_every_steps=10),
              defaults(cr_interval_s=3600.0), defaults(torchft_quorum_s=0.23)):
        rows = [gm.model(g, p) for g in SIZES]
        for key in ("ettr", "ettr_checkpoint_restart", "ettr_torchft"):
            values = [r[key] for r in rows]
            assert all(a >= b for a, b in zip(values, values[1:])), (key, values)


def test_checkpoint_restart_is_never_above_shoal_when_shoal_costs_less_per_failure_and_per_step():
    compared = 0
    for p in (defaults(), defaults(storage_gbyte_per_s=100000.0), defaults(cr_restart_s=30.0),
              defaults(shoal_step_overhead=0.0)):
        for g in SIZES:
            row = gm.model(g, p)
            if (row["shoal_cost_per_failure_s"] <= row["checkpoint_restart_cost_per_failure_s"]
                    and row["shoal_steady_overhead"] <= row["checkpoint_restart_steady_overhead"]):
                assert row["ettr"] >= row["ettr_checkpoint_restart"], row
                compared += 1
    assert compared >= len(SIZES)  # the case arises, at the defaults' large sizes and with no overhead


def test_without_a_steady_overhead_shoal_is_its_failures_only_figure():
    row = gm.model(16384, defaults(shoal_step_overhead=0.0))
    assert row["shoal_steady_overhead"] == 0.0 and row["ettr"] == row["ettr_shoal_failures_only"]


def test_shoal_cost_is_the_sum_of_its_parts_and_each_part_follows_its_input():
    p = defaults()
    cost, parts, steady = gm.shoal_costs(16384, p)
    assert close(cost, sum(parts.values()))
    assert close(parts["redo_s"], 1.5 * p["step_s"])  # half a step in flight + one redone
    assert close(parts["rebuild_s"], 2.0 + 0.12 * 4)  # 4 doublings past 1,024 GPUs
    assert close(parts["detect_and_view_s"], 1.02 * math.log(2048) / math.log(1000))
    assert gm.shoal_costs(512, p)[1]["rebuild_s"] == 2.0  # never below the figure at 1,024
    # a flash checkpoint every 4 steps: a quarter of the steady cost, 1.5 more steps redone
    cost4, parts4, steady4 = gm.shoal_costs(16384, defaults(shoal_ckpt_every_steps=4))
    assert close(steady4, steady / 4) and close(parts4["redo_s"], 3.0 * p["step_s"])
    # a measured overhead replaces the derived one
    assert gm.shoal_costs(16384, defaults(shoal_step_overhead=0.07))[2] == 0.07


def test_a_gpu_failure_that_costs_one_gpu_costs_less_than_one_that_costs_the_host():
    host = gm.shoal_costs(1024, defaults(gpu_failure_loses=8))[1]["capacity_s"]
    shrink = gm.shoal_costs(1024, defaults(gpu_failure_loses=1))[1]["capacity_s"]
    assert shrink < host
    frac = gm.DEFAULTS["gpu_caused_fraction"]
    assert close(shrink, (frac * 1 + (1 - frac) * 8) / 1024 * gm.DEFAULTS["replace_s"])


def test_checkpoint_restart_restart_time_runs_between_its_two_sources():
    p = defaults()
    at = lambda g: gm.checkpoint_restart_costs(g, 1e4, p)[1]["restart_s"]
    assert close(at(32), 43.0) and close(at(100000), 600.0) and 43.0 < at(16384) < 600.0
    assert gm.checkpoint_restart_costs(100000, 1e4, defaults(cr_restart_s=60.0))[1]["restart_s"] == 60.0


def test_the_program_prints_a_line_per_size_the_peers_and_the_targets():
    lines = run("--gpus", "1024,16384,100000")
    ettr = [l for l in lines if l["kind"] == "ettr"]
    assert [l["gpus"] for l in ettr] == [1024, 16384, 100000]
    for l in ettr:
        for key in ("ettr", "ettr_checkpoint_restart", "ettr_torchft", "failures_per_day",
                    "shoal_cost_per_failure_s", "checkpoint_restart_interval_s", "checkpoint_restart_save_s"):
            assert key in l, key
        assert 0.0 <= l["ettr"] <= 1.0
    systems = {l["system"] for l in lines if l["kind"] == "published"}
    assert "ByteRobust (published)" in systems and "Meta FT-HSDP (published)" in systems
    assert all(s.endswith("(published)") for s in systems)
    targets = [l for l in lines if l["kind"] == "targets"]
    assert len(targets) == 1 and "meets_0.99_at_16384" in targets[0] and "meets_0.97_at_100000" in targets[0]


def test_a_flag_changes_its_input():
    base = run("--gpus", "16384")[0]
    doubled = run("--gpus", "16384", "--mtbf-per-gpu-hours", str(2 * gm.DEFAULTS["mtbf_per_gpu_hours"]))[0]
    assert close(doubled["failures_per_day"], base["failures_per_day"] / 2, 1e-5)
    assert doubled["ettr"] > base["ettr"]


def test_every_input_has_a_source_and_sources_prints_them_all():
    assert all(i.source and i.unit for i in gm.INPUTS)
    lines = run("--sources")
    assert [l["flag"] for l in lines] == ["--" + i.name.replace("_", "-") for i in gm.INPUTS]


def test_plot_draws_a_png_or_says_that_matplotlib_is_missing():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        matplotlib = None
    if matplotlib is not None:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ettr.png")
            run("--gpus", "1024,100000", "--plot", path)
            with open(path, "rb") as f:
                assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        return
    try:
        run("--gpus", "1024", "--plot", os.devnull)
    except SystemExit as e:
        assert "matplotlib" in str(e.code)
    else:
        raise AssertionError("--plot without matplotlib did not fail")


if __name__ == "__main__":
    for name, test in sorted(globals().items()):
        if name.startswith("test_") and callable(test):
            test()
            print("ok", name)
