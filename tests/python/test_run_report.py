"""What an elastic run lost reaches the agent (Session.report_run, `trainer-stats`): the keys are ElasticStats'
fields, a bad report is refused naming the figure, the loop reports after its first step, then at most every
interval and when batches() ends (a failure logged once), and a real run's job.stats() shows in `shoal status`
of its agent, embedded in the trainer and as `shoal agent` with a connected trainer."""
import dataclasses
import json
import logging
import os
import subprocess
import sys

import pytest

import shoal
import shoal.torch
from agents import SHOAL, Agent, free_ports
from conftest import PYTHON, child_env, wait_for
from shoal.torch.run_stats import ElasticStats, RunStats, StatsReporter

# Trains `steps` steps of a tiny model with shoal.torch.Elastic over `session`; prints job.stats() and what
# `shoal status --json` of `control` says of the trainers once it has the run's last report.
RUN = r"""
import json, subprocess, time
import torch
import shoal, shoal.torch


def run(session, control, steps, shoal_bin):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.ones(4), torch.ones(1)) for _ in range(64)]
    job = shoal.torch.Elastic(session, model, opt, sampler=shoal.torch.ElasticSampler(len(data), 4))
    for x, y in job.batches(data, steps=steps):
        with job.step():
            opt.zero_grad()
            torch.nn.functional.mse_loss(job.model(x), y).backward()
            opt.step()
    stats = job.stats().as_dict()
    trainers = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        doc = json.loads(subprocess.run([shoal_bin, "status", "--control", control, "--json"],
                                        stdout=subprocess.PIPE, timeout=10).stdout)
        trainers = doc.get("trainers", [])
        if trainers and trainers[0]["figures"].get("steps_completed") == steps:
            break
        time.sleep(0.05)
    job.close()
    print(json.dumps({"stats": stats, "trainers": trainers}), flush=True)
"""

CONNECTED = RUN + r"""
import os
s = shoal.Session.connect()
run(s, os.environ["SHOAL_CONTROL"], 5, os.environ["SHOAL_BIN"])
s.leave()
"""


def test_the_agent_takes_the_figures_of_elastic_stats():
    assert shoal.Session.run_report_keys() == [f.name for f in dataclasses.fields(ElasticStats)]


BAD = [
    ({"speed": 1.0}, "unknown figure 'speed'"),
    ({"ettr": 1.5}, "ettr=1.5 is above 1"),
    ({"rebuilds": 0.5}, "is not a whole count"),
    ({"stall_s": -1.0}, "is not a finite non-negative number"),
    ({"wall_s": float("nan")}, "is not a finite non-negative number"),
    ({}, "no figures"),
]


def test_a_bad_report_is_refused_naming_the_figure(session):
    for figures, match in BAD:  # one session for all (each takes a moment to start)
        with pytest.raises(shoal.Error, match=match):
            session.report_run(figures)
    session.report_run({"steps_completed": 3, "ettr": 0.5})  # a good one is taken


def test_the_loop_reports_after_its_first_step_then_every_interval_and_at_the_end(caplog):
    now = [0.0]
    run = RunStats(lambda: now[0])
    run.loop_started()
    sent = []
    reporter = StatsReporter(sent.append, every_s=10.0, clock=lambda: now[0])
    for step in range(30):  # one step a second
        now[0] += 1.0
        run.step_completed(step, 8)
        reporter.step_completed(run.snapshot)
    assert [d["steps_completed"] for d in sent] == [1, 11, 21]
    reporter.ended(run.snapshot())
    assert sent[-1]["steps_completed"] == 30 and sent[-1]["wall_s"] == 30.0 and sent[-1]["samples_trained"] == 240

    def refuse(figures):
        raise shoal.Error("the agent is gone")

    failing = StatsReporter(refuse, every_s=0.0, clock=lambda: now[0])
    with caplog.at_level(logging.DEBUG, logger="shoal.torch"):
        for _ in range(3):
            failing.ended(run.snapshot())  # never raises
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "the agent is gone" in warnings[0].getMessage()
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 2


def check_report(doc, steps):
    stats, trainers = doc["stats"], doc["trainers"]
    assert len(trainers) == 1 and trainers[0]["rank"] == 0, trainers
    got = trainers[0]["figures"]
    assert got["steps_completed"] == stats["steps_completed"] == steps, doc
    assert got["samples_trained"] == stats["samples_trained"] == 4 * steps, doc
    assert got["rebuilds"] == 0 and got["steps_discarded"] == 0, doc
    assert 0.0 < got["ettr"] <= 1.0 and got["wall_s"] > 0, doc
    assert 0 <= trainers[0]["age_s"] < 10 and trainers[0]["reports"] >= 1, trainers


def test_an_embedded_runs_figures_reach_its_agent(job, tmp_path, capsys):
    control = str(tmp_path / "solo.sock")
    s = shoal.Session.start(insecure=True, name="solo", bind="127.0.0.1:0", control_path=control, cluster=job,
                            job=job, log_spec="warn")
    try:
        s.wait_for_view(0, 30.0)
        namespace = {}
        exec(RUN, namespace)  # noqa: S102 (the test's own code)
        namespace["run"](s, control, 4, SHOAL)
    finally:
        s.leave()
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    check_report(doc, 4)


def test_a_connected_trainers_figures_reach_its_agent(job, tmp_path):
    port = free_ports(1)[0]
    env = child_env(SHOAL_LOG="info", SHOAL_BIN=SHOAL)
    agent = Agent("h0", port, None, job, [PYTHON, "-c", CONNECTED], str(tmp_path), ["--workers", "connect"], env=env)
    try:
        docs = wait_for(lambda: [d for _, _, d in agent.docs() if "trainers" in d] or None, 60, "the worker's line")
        check_report(docs[0], 5)
    except BaseException:
        print(agent.text()[-4000:], file=sys.stderr)
        raise
    finally:
        agent.stop()
