"""deploy/kubernetes/ and a pod's side of `shoal agent`: every manifest is valid against the Kubernetes API's
schemas (the kubernetes-validate package, offline, strict: an unknown field is an error), every flag the
manifests pass to `shoal` exists in that subcommand's --help, and real agents started with a pod's
environment (KUBERNETES_SERVICE_HOST and the downward API's SHOAL_* variables) and no --name, --host, --job,
--cluster, --advertise or --slots take them, and are ready (`shoal view --ready`) only once in a committed
view. No Kubernetes cluster runs here: the manifests are checked, not applied."""
import glob
import json
import os
import subprocess
import sys

import pytest
import yaml

from agents import SHOAL, _Host, free_ports
from conftest import child_env, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.join(HERE, "..", "..", "deploy", "kubernetes")
IN_VENV = sys.prefix != sys.base_prefix
# The oldest Kubernetes the manifests are for (the Job's batch.kubernetes.io/job-name label is 1.27's) and
# the newest schemas the pinned package has.
VERSIONS = ["1.28.0", "1.37.0"]
once = pytest.mark.skipif(IN_VENV, reason="runs outside virtual environments only")


def documents():
    files = sorted(glob.glob(os.path.join(DEPLOY, "*.yaml")))
    assert len(files) >= 3, files
    out = []
    for f in files:
        with open(f) as fh:
            out += [(os.path.basename(f), d) for d in yaml.safe_load_all(fh) if d]
    return out


def test_every_manifest_is_valid_against_the_kubernetes_schemas():
    if not IN_VENV:
        pytest.skip("kubernetes-validate is installed in the virtual environment (scripts/setup-venv.sh)")
    try:
        import kubernetes_validate
    except ImportError:
        pytest.fail("kubernetes-validate is missing from this virtual environment: run scripts/setup-venv.sh")
    docs = documents()
    assert {d["kind"] for _, d in docs} >= {"Service", "Job", "PersistentVolumeClaim"}
    for name, d in docs:
        for version in VERSIONS:
            try:
                kubernetes_validate.validate(d, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                pytest.fail("%s (%s %s) is invalid for Kubernetes %s: %s" % (name, d["kind"], d["metadata"]["name"],
                                                                           version, e.message))
    # The check itself refuses a field the API does not have.
    job = next(d for _, d in docs if d["kind"] == "Job")
    wrong = json.loads(json.dumps(job))
    wrong["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong, VERSIONS[0], strict=True)


def shoal_commands():
    """Every command line the manifests run that starts with `shoal`: (file, argv)."""
    out = []
    for name, d in documents():
        if d["kind"] != "Job":
            continue
        for c in d["spec"]["template"]["spec"]["containers"]:
            out.append((name, c["command"] + c.get("args", [])))
            for hook in ("preStop", "postStart"):
                if hook in c.get("lifecycle", {}):
                    out.append((name, c["lifecycle"][hook]["exec"]["command"]))
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                if probe in c:
                    out.append((name, c[probe]["exec"]["command"]))
    return [(n, argv) for n, argv in out if argv and argv[0] == "shoal"]


@once
def test_every_flag_the_manifests_pass_exists_in_help():
    commands = shoal_commands()
    assert {argv[1] for _, argv in commands} >= {"agent", "drain", "view", "status"}, commands
    helps = {}
    for name, argv in commands:
        sub = argv[1]
        if sub not in helps:
            helps[sub] = subprocess.run([SHOAL, sub, "--help"], capture_output=True, text=True, timeout=10).stdout
        flags = argv[2:argv.index("--")] if "--" in argv else argv[2:]
        for flag in (a for a in flags if a.startswith("--")):
            assert "  " + flag + " " in helps[sub] or "  " + flag + "\n" in helps[sub] or \
                "  " + flag + "," in helps[sub], "%s: `shoal %s %s` is no flag of `shoal %s --help`" % (
                    name, sub, flag, sub)


def pod_agent(name, node, port, seed_port, job, tmp_path, gpus="0,1"):
    """`shoal agent` as the Job's container runs it, with a pod's environment and no naming flag."""
    control = os.path.join(str(tmp_path), name + ".sock")
    argv = [SHOAL, "agent", "--insecure", "--bind", "127.0.0.1:%d" % port, "--control", control,
            "--min-hosts", "2"]
    if seed_port:
        argv += ["--seeds", "127.0.0.1:%d" % seed_port]
    env = child_env(KUBERNETES_SERVICE_HOST="10.96.0.1", SHOAL_POD_NAME=name, SHOAL_NODE_NAME=node,
                    SHOAL_JOB=job, SHOAL_POD_IP="127.0.0.1", NVIDIA_VISIBLE_DEVICES=gpus, SHOAL_LOG="info")
    host = _Host(argv, env, subprocess.STDOUT)
    host.control = control
    return host


def view(control, *flags):
    return subprocess.run([SHOAL, "view", "--control", control] + list(flags), capture_output=True, text=True,
                          timeout=10)


@once
def test_agents_in_pods_take_their_names_from_the_downward_api_and_are_ready_once_in_a_view(job, tmp_path):
    ports = free_ports(2)
    first = pod_agent("train-0-x7k2p", "gpu-node-a", ports[0], None, job, tmp_path)
    hosts = [first]
    try:
        wait_for(lambda: view(first.control, "--json").returncode == 0, 30, "the first agent's control socket")
        alone = view(first.control, "--ready")
        assert alone.returncode == 3, (alone.returncode, alone.stderr)  # --min-hosts 2: no view yet
        assert "not ready" in alone.stderr and alone.stdout == ""
        second = pod_agent("train-1-q9m4d", "gpu-node-b", ports[1], ports[0], job, tmp_path, gpus="GPU-1a2b")
        hosts.append(second)
        for h in hosts:
            wait_for(lambda: view(h.control, "--ready").returncode == 0, 30, "a committed view of both pods")
        doc = json.loads(view(first.control, "--json").stdout)
        assert doc["self"] == "train-0-x7k2p"
        members = {m["name"]: m for m in doc["members"]}
        assert set(members) == {"train-0-x7k2p", "train-1-q9m4d"}
        assert members["train-0-x7k2p"]["host"] == "gpu-node-a" and members["train-1-q9m4d"]["host"] == "gpu-node-b"
        assert members["train-0-x7k2p"]["slots"] == 2 and members["train-1-q9m4d"]["slots"] == 1
        assert members["train-1-q9m4d"]["addr"] == "127.0.0.1:%d" % ports[1]
        assert doc["world_size"] == 3
        log = "\n".join(t for _, t in first._lines())
        assert "under Kubernetes: member name train-0-x7k2p from SHOAL_POD_NAME" in log, log[-3000:]
        assert "under Kubernetes: cluster id and checkpoint job %s from SHOAL_JOB" % job in log
        missing = view(os.path.join(str(tmp_path), "nosuch.sock"), "--ready")
        assert missing.returncode == 1, missing.stderr  # no agent answers: not 3
    except BaseException:
        for h in hosts:
            print("==== (exit %s)\n%s" % (h.proc.poll(), "\n".join(t for _, t in h._lines())[-4000:]))
        raise
    finally:
        for h in hosts:
            h.kill()


@once
def test_a_bad_value_in_the_pods_environment_is_a_usage_error_naming_it(tmp_path):
    (port,) = free_ports(1)
    env = child_env(KUBERNETES_SERVICE_HOST="10.96.0.1", NVIDIA_VISIBLE_DEVICES="0,,1")
    r = subprocess.run([SHOAL, "agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:%d" % port, "--control",
                        str(tmp_path / "a.sock")], env=env, capture_output=True, text=True, timeout=20)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "NVIDIA_VISIBLE_DEVICES" in r.stderr and "--no-kubernetes" in r.stderr, r.stderr
    ok = subprocess.run([SHOAL, "agent", "--insecure", "--no-kubernetes", "--name", "a", "--bind",
                         "127.0.0.1:%d" % port, "--control", str(tmp_path / "a.sock"), "--join-timeout", "0.5",
                         "--seeds", "127.0.0.1:1"], env=env, capture_output=True, text=True, timeout=20)
    assert ok.returncode == 1 and "NVIDIA_VISIBLE_DEVICES" not in ok.stderr, (ok.returncode, ok.stderr)  # alone: exit 1
