"""The operator CLI's command lines, parsed without any server (commands.main, commands.common).

Matrix: each of ``install``, ``activate``, ``trace`` and ``history`` with its flags and
defaults; what ``install`` creates from them (name defaulting as ``crossplane xpkg
install``, every spec field); KIND/NAME and duration spellings, good and bad; arguments
refused before anything is created; and the areas registered beside them.
"""

from __future__ import annotations

import argparse

import pytest

from lockwright.commands import common
from lockwright.commands.install import package_object, problem
from lockwright.commands.main import build_parser
from lockwright.commands.progress import FOLLOW_RUNS

REF = "xpkg.example.org/acme/provider-x:v1.0.0"


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


# --- install ------------------------------------------------------------------------------
def test_install_defaults() -> None:
    """Without flags: no name (derived later), Automatic, no wait, a 5 minute timeout."""
    args = parse("install", "provider", REF)
    assert (args.kind, args.reference, args.name, args.manual_approval) == (
        "provider", REF, None, False)
    assert (args.runtime_config, args.package_pull_secrets, args.revision_history_limit) == (
        None, [], None)
    assert (args.wait, args.timeout) == (False, 300.0)


def test_install_every_flag() -> None:
    args = parse("install", "function", REF, "--name", "fn", "-m", "--runtime-config", "rc",
                 "--package-pull-secrets", "a, b,", "-r", "3", "--wait", "--timeout", "1m30s",
                 "--kubeconfig", "/k", "--temporal-address", "t:7233")
    assert (args.kind, args.name, args.manual_approval, args.runtime_config) == (
        "function", "fn", True, "rc")
    assert (args.package_pull_secrets, args.revision_history_limit) == (["a", "b"], 3)
    assert (args.wait, args.timeout, args.kubeconfig, args.temporal_address) == (
        True, 90.0, "/k", "t:7233")


@pytest.mark.parametrize("argv", [
    ("install", "providers", REF),  # the kind argument takes the three kinds only
    ("install", "provider", REF, "--timeout", "soon"),
    ("install", "provider", REF, "-r", "many"),
])
def test_install_refuses(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(*argv)
    assert exc.value.code == 2
    assert "usage: lockwright install" in capsys.readouterr().err


@pytest.mark.parametrize("kind, argv, spec", [
    ("provider", {}, {"package": REF, "revisionActivationPolicy": "Automatic"}),
    ("function", {"manual": True, "runtime_config": "rc", "pull_secrets": ["s1", "s2"],
                  "history_limit": 0},
     {"package": REF, "revisionActivationPolicy": "Manual", "runtimeConfigRef": {"name": "rc"},
      "packagePullSecrets": [{"name": "s1"}, {"name": "s2"}], "revisionHistoryLimit": 0}),
])
def test_package_object(kind: str, argv: dict[str, object], spec: dict[str, object]) -> None:
    """What install creates: only the fields asked for, as a manifest would have them."""
    obj = package_object(kind, REF, "x", **argv)  # type: ignore[arg-type]
    assert obj == {"apiVersion": "pkg.crossplane.io/v1", "kind": common.KINDS[kind],
                   "metadata": {"name": "x"}, "spec": spec}


@pytest.mark.parametrize("argv, found", [
    (("provider", REF), ""),
    (("provider", "127.0.0.1:5000/p:v1"), ""),
    (("provider", "acme/provider-x:v1"), "must be a fully qualified image name"),
    (("provider", "xpkg.example.org/acme/provider-x"), "must be a fully qualified image name"),
    (("configuration", REF, "--runtime-config", "rc"), "no --runtime-config"),
    (("provider", REF, "--name", "Not_A_Name"), "is not a valid object name"),
    (("provider",), ("give KIND REF (provider, configuration or function, then the package) "
                     "or --api")),
    ((), "give KIND REF"),
    (("--api", "buckets.s3.example.org/v1"), ""),
    (("--api", "buckets.s3.example.org/v1", "--repository", "r.example.org/p"), ""),
    (("provider", REF, "--api", "buckets.s3.example.org/v1"),
     "give either KIND REF or --api API, not both"),
    (("provider", REF, "--repository", "r.example.org/p"), "--repository goes with --api"),
])
def test_install_problems(argv: tuple[str, ...], found: str) -> None:
    """Arguments that cannot make a package are refused before anything is created."""
    text = problem(parse("install", *argv))
    assert (found in text) if found else text == ""


# --- approve, trace, history --------------------------------------------------------------
@pytest.mark.parametrize("command", ["approve", "activate"])  # activate: its older name
def test_approve(command: str) -> None:
    args = parse(command, "provider/p")
    assert (args.package, args.revision, args.timeout) == (
        common.PackageRef("provider", "p"), None, 300.0)
    args = parse(command, "Provider/p", "p-0123456789ab", "--timeout", "30s")
    assert (args.package.name, args.revision, args.timeout) == ("p", "p-0123456789ab", 30.0)


def test_install_manual_approval_keeps_its_older_flag() -> None:
    """``--manual-activation`` was the flag's name; it still says Manual."""
    for flag in ("-m", "--manual-approval", "--manual-activation"):
        assert parse("install", "provider", REF, flag).manual_approval


@pytest.mark.parametrize("command", ["trace", "history"])
@pytest.mark.parametrize("flags, output", [((), None), (("-o", "wide"), "wide"),
                                           (("-o", "json"), "json")])
def test_trace_and_history_outputs(command: str, flags: tuple[str, ...],
                                   output: str | None) -> None:
    args = parse(command, "configuration/platform", *flags)
    assert (args.package, args.output) == (common.PackageRef("configuration", "platform"),
                                           output)


def test_history_runs() -> None:
    assert parse("history", "provider/p").runs == 20
    assert parse("history", "provider/p", "--runs", "3").runs == 3
    assert FOLLOW_RUNS < 20  # install --wait reads fewer: a new package has few runs


def test_trace_outputs_and_watch() -> None:
    """Crossplane's outputs (issue 31): yaml and dot too; -w/--watch and --exit-healthy."""
    assert [parse("trace", "provider/p", "-o", o).output for o in ("yaml", "dot")] == [
        "yaml", "dot"]
    args = parse("trace", "provider/p")
    assert (args.watch, args.exit_healthy) == (False, False)
    args = parse("trace", "provider/p", "-w", "--exit-healthy")
    assert (args.watch, args.exit_healthy) == (True, True)
    assert parse("trace", "provider/p", "--watch").watch


@pytest.mark.parametrize("argv", [
    ("trace", "provider/p", "-o", "table"),
    ("trace", "deployment/p"),
    ("history", "provider/p", "--runs", "0"),
    ("approve", "provider"),
    ("activate", "provider"),
])
def test_refused(argv: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(*argv)
    assert exc.value.code == 2


def test_every_area_is_registered() -> None:
    """The operator commands first, then the areas that were there before, in that order."""
    listed = [line.split()[0] for line in build_parser().format_help().splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert listed == ["install", "approve", "plan", "trace", "history", "search", "api",
                      "xpkg", "index", "crds",
                      "worker",
                      "watcher", "dev", "devcluster"]


def test_connection_settings_only() -> None:
    """The operator commands take where Kubernetes and Temporal are, not worker tuning."""
    args = parse("trace", "provider/p", "--system-namespace", "ops", "--temporal-namespace",
                 "prod", "--temporal-tls", "true", "--temporal-api-key-file", "/key")
    assert (args.system_namespace, args.temporal_namespace, args.temporal_tls,
            args.temporal_api_key_file) == ("ops", "prod", "true", "/key")
    with pytest.raises(SystemExit):
        parse("trace", "provider/p", "--resync-seconds", "5")


# --- spellings ----------------------------------------------------------------------------
@pytest.mark.parametrize("text, kind, name", [
    ("provider/p", "provider", "p"),
    ("Provider/p", "provider", "p"),
    ("providers/p", "provider", "p"),
    ("configurations.pkg.crossplane.io/c", "configuration", "c"),
    ("function/f", "function", "f"),
])
def test_package_ref(text: str, kind: str, name: str) -> None:
    ref = common.package_ref(text)
    assert (ref.kind, ref.name, ref.title, str(ref)) == (
        kind, name, common.KINDS[kind], f"{kind}/{name}")


@pytest.mark.parametrize("text", ["provider", "provider/", "pod/p", "provider/a/b", "/p"])
def test_package_ref_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="KIND/NAME"):
        common.package_ref(text)


@pytest.mark.parametrize("text, seconds", [
    ("90", 90.0), ("2.5", 2.5), ("90s", 90.0), ("5m", 300.0), ("1h", 3600.0),
    ("1m30s", 90.0), ("1h2m3s", 3723.0), ("0.5s", 0.5),
])
def test_duration(text: str, seconds: float) -> None:
    assert common.duration(text) == seconds


@pytest.mark.parametrize("text", ["", "s", "5x", "m5", "-1s", "0", "0s", "1.2.3"])
def test_duration_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        common.duration(text)


# --- failures at the edge -----------------------------------------------------------------
def test_a_missing_kubeconfig_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """No traceback: the command says which kubeconfig it could not load, and exits 1."""
    args = parse("trace", "provider/p", "--kubeconfig", "/nonexistent/kubeconfig")
    assert args.func(args) == 1
    assert capsys.readouterr().err.startswith(
        "error: cannot load a kubeconfig (/nonexistent/kubeconfig): ")


def test_a_bad_setting_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse("history", "provider/p", "--temporal-address", "nowhere")
    with pytest.raises(SystemExit) as exc:
        args.func(args)
    assert exc.value.code == 2
    assert "--temporal-address / LOCKWRIGHT_TEMPORAL_ADDRESS" in capsys.readouterr().err


def test_plan_takes_a_candidate_and_an_output() -> None:
    args = parse("plan", "provider/p", "--package", "xpkg.example.org/p:v2", "-o", "json")
    assert (args.package.name, args.candidate, args.output) == ("p", "xpkg.example.org/p:v2",
                                                                "json")
    assert parse("plan", "configuration/c").candidate is None


def test_activate_can_accept_the_plan() -> None:
    assert parse("approve", "provider/p", "p-1", "--accept-plan").accept_plan
    assert not parse("activate", "provider/p").accept_plan


# --- the process entry point ----------------------------------------------------------------
class Exited(Exception):
    """``os._exit`` called (a test cannot let it end the process)."""


@pytest.mark.parametrize("temporal_ran", [False, True])
def test_the_entry_point_exits_with_the_commands_code_and_skips_teardown_after_temporal(
        monkeypatch: pytest.MonkeyPatch, temporal_ran: bool) -> None:
    """After a Temporal client ran, the process ends with ``os._exit`` (the SDK's threads
    can abort the interpreter's teardown, temporalio/sdk-python#300); otherwise as usual."""
    import os
    import sys
    import types

    from lockwright.commands import main as entry

    def hard_exit(code: int) -> None:
        raise Exited(code)

    monkeypatch.setattr(entry, "main", lambda: 2)
    monkeypatch.setattr(os, "_exit", hard_exit)
    if temporal_ran:
        monkeypatch.setitem(sys.modules, entry.TEMPORAL_CORE, types.ModuleType("core"))
    else:
        monkeypatch.delitem(sys.modules, entry.TEMPORAL_CORE, raising=False)
    with pytest.raises(Exited if temporal_ran else SystemExit) as stopped:
        entry.run()
    assert stopped.value.args[0] == 2


def test_a_reader_that_goes_away_ends_the_command_without_a_traceback() -> None:
    """``lockwright history ... | head``: the pipe closes while the command still prints."""
    import subprocess
    import sys

    script = ("from lockwright.commands import main as m\n"
              "m.main = lambda argv=None: print('row\\n' * 100_000) or 0\n"
              "m.run()\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(4) == b"row\n"
    proc.stdout.close()  # as head does after its lines
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=30) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
