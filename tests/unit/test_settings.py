"""Settings: flag beats environment beats default; invalid values name the flag and fix."""

from __future__ import annotations

import argparse

import pytest

from lockwright.commands.settings import add_arguments
from lockwright.settings import SPECS, Settings, SettingsError, from_args
from lockwright.xpkg.constraints import parse_constraint


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults_without_flags_or_environment() -> None:
    s = from_args(parse(), {})
    assert (s.temporal_address, s.temporal_namespace, s.task_queue) == (
        "127.0.0.1:7233", "default", "lockwright")
    assert (s.system_namespace, s.crossplane_version, s.package_runtime) == (
        "crossplane-system", "v2.3.0", "Deployment")
    assert s.kubeconfig == "" and s.insecure_registries == ()
    assert s.upgrade_gate == "Evidence"  # issue 22: hold only on evidence by default
    assert s.cache_dir.endswith("lockwright/xpkg")


@pytest.mark.parametrize(("field", "flag", "env", "flag_value", "env_value", "expected"), [
    ("temporal_address", "--temporal-address", "LOCKWRIGHT_TEMPORAL_ADDRESS",
     "10.0.0.1:7233", "10.0.0.2:7233", "10.0.0.1:7233"),
    ("temporal_namespace", "--temporal-namespace", "LOCKWRIGHT_TEMPORAL_NAMESPACE",
     "a", "b", "a"),
    ("task_queue", "--task-queue", "LOCKWRIGHT_TASK_QUEUE", "q1", "q2", "q1"),
    ("kubeconfig", "--kubeconfig", "KUBECONFIG", "/a", "/b", "/a"),
    ("system_namespace", "--system-namespace", "LOCKWRIGHT_SYSTEM_NAMESPACE", "ns-a", "ns-b",
     "ns-a"),
    ("cache_dir", "--cache-dir", "LOCKWRIGHT_CACHE_DIR", "/c1", "/c2", "/c1"),
    ("insecure_registries", "--insecure-registries", "LOCKWRIGHT_INSECURE_REGISTRIES",
     "a:1, b:2", "c:3", ("a:1", "b:2")),
    ("crossplane_version", "--crossplane-version", "LOCKWRIGHT_CROSSPLANE_VERSION",
     "v2.0.0", "v1.19.0", "v2.0.0"),
    ("package_runtime", "--package-runtime", "LOCKWRIGHT_PACKAGE_RUNTIME", "External",
     "Deployment", "External"),
    ("resync_seconds", "--resync-seconds", "LOCKWRIGHT_RESYNC_SECONDS", "5", "7", 5.0),
    ("resync_rate", "--resync-rate", "LOCKWRIGHT_RESYNC_RATE", "2.5", "7", 2.5),
    ("max_concurrent_activities", "--max-concurrent-activities",
     "LOCKWRIGHT_MAX_CONCURRENT_ACTIVITIES", "4", "8", 4),
    ("upgrade_gate", "--upgrade-gate", "LOCKWRIGHT_UPGRADE_GATE", "Strict", "Evidence",
     "Strict"),
    ("revision_names", "--revision-names", "LOCKWRIGHT_REVISION_NAMES", "Digest", "Generation",
     "Digest"),
    ("package_indexes", "--package-indexes", "LOCKWRIGHT_PACKAGE_INDEXES",
     "registry.example.org/team/index:v1, 127.0.0.1:5000/idx/index",
     "registry.example.org/other/index@sha256:" + "a" * 64,
     ("registry.example.org/team/index:v1", "127.0.0.1:5000/idx/index")),
])
def test_flag_beats_environment_beats_default(field: str, flag: str, env: str, flag_value: str,
                                              env_value: str, expected: object) -> None:
    assert getattr(from_args(parse(flag, flag_value), {env: env_value}), field) == expected
    from_env = from_args(parse(), {env: env_value})
    assert getattr(from_env, field) == getattr(from_args(parse(flag, env_value), {}), field)


def test_every_setting_has_a_flag_and_a_variable() -> None:
    help_text = argparse.ArgumentParser()
    add_arguments(help_text)
    rendered = help_text.format_help()
    for spec in SPECS:
        assert spec.flag in rendered and spec.env in rendered


@pytest.mark.parametrize(("env", "value", "flag", "fix"), [
    ("LOCKWRIGHT_PACKAGE_RUNTIME", "Pod", "--package-runtime", "Deployment, External"),
    ("LOCKWRIGHT_TEMPORAL_ADDRESS", "localhost", "--temporal-address", "127.0.0.1:7233"),
    ("LOCKWRIGHT_CROSSPLANE_VERSION", "latest", "--crossplane-version", "v2.3.0"),
    ("LOCKWRIGHT_SYSTEM_NAMESPACE", "Crossplane_System", "--system-namespace",
     "crossplane-system"),
    ("LOCKWRIGHT_INSECURE_REGISTRIES", "http://x/y", "--insecure-registries", "127.0.0.1:5000"),
    ("LOCKWRIGHT_RESYNC_SECONDS", "soon", "--resync-seconds", "number"),
    ("LOCKWRIGHT_RESYNC_SECONDS", "-1", "--resync-seconds", "0 turns resync off"),
    ("LOCKWRIGHT_RESYNC_RATE", "-1", "--resync-rate", "0 = no limit"),
    ("LOCKWRIGHT_MAX_CONCURRENT_ACTIVITIES", "0", "--max-concurrent-activities", "positive"),
    ("LOCKWRIGHT_DEFAULT_ACTIVATIONS", "*,[a", "--default-activations", "filepath.Match"),
    ("LOCKWRIGHT_MANAGED_RESOURCE_DEFINITIONS", "maybe", "--managed-resource-definitions",
     "true"),
    ("LOCKWRIGHT_UPGRADE_GATE", "strict", "--upgrade-gate", "Evidence, Strict"),
    ("LOCKWRIGHT_REVISION_NAMES", "digest", "--revision-names", "Generation, Digest"),
    ("LOCKWRIGHT_PACKAGE_INDEXES", "team/index:v1", "--package-indexes",
     "registry.example.org/team/index:v1"),
    ("LOCKWRIGHT_PACKAGE_INDEXES", "registry.example.org/Team/Index", "--package-indexes",
     "comma-separated"),
])
def test_invalid_values_name_the_flag_variable_and_fix(env: str, value: str, flag: str,
                                                       fix: str) -> None:
    with pytest.raises(SettingsError) as err:
        from_args(parse(), {env: value})
    assert flag in str(err.value) and env in str(err.value) and fix in str(err.value)


@pytest.mark.parametrize(("environ", "patterns"), [
    ({}, ("*",)), ({"LOCKWRIGHT_DEFAULT_ACTIVATIONS": ""}, ()),
    ({"LOCKWRIGHT_DEFAULT_ACTIVATIONS": "*.aws.io, *.gcp.io"}, ("*.aws.io", "*.gcp.io")),
])
def test_default_activations_empty_means_no_policy(environ: dict[str, str],
                                                   patterns: tuple[str, ...]) -> None:
    assert from_args(None, environ).default_activations == patterns


def test_managed_resource_definitions_are_on_by_default() -> None:
    assert Settings().managed_resource_definitions
    assert not from_args(None, {"LOCKWRIGHT_MANAGED_RESOURCE_DEFINITIONS": "false"}
                         ).managed_resource_definitions


def test_env_round_trips_for_child_processes() -> None:
    s = Settings(kubeconfig="/k", insecure_registries=("a:1", "b:2"), task_queue="q")
    assert from_args(None, s.env()) == s
    assert "KUBECONFIG" not in Settings().env()


def test_tuning_must_be_a_json_object_of_numbers() -> None:
    from lockwright.settings import SettingsError, from_args

    assert from_args(None, {"LOCKWRIGHT_TUNING": '{"backoff_max_s": 2}'}).tuning
    with pytest.raises(SettingsError, match="LOCKWRIGHT_TUNING"):
        from_args(None, {"LOCKWRIGHT_TUNING": '{"backoff_max_s": "soon"}'})


def test_watcher_builds_workflow_tuning_from_setting() -> None:
    from lockwright.worker.watcher import workflow_tuning

    assert workflow_tuning('{"backoff_max_s": 2}').backoff_max_s == 2
    with pytest.raises(SystemExit, match="known keys"):
        workflow_tuning('{"nonsense": 1}')


@pytest.mark.parametrize(("constraint", "installs"), [
    (">=v2.0.0", True),  # a package written for Crossplane v2
    (">=v1.14.0-0", True),  # most v1 packages: any later release
    ("^v2.0.0", True),
    ("<v2.0.0", False),  # a package that refuses v2
    (">=v3.0.0", False),
])
def test_default_crossplane_version_is_a_v2_release(constraint: str, installs: bool) -> None:
    """By default lockwright answers ``spec.crossplane.version`` as a current v2 release."""
    assert parse_constraint(constraint).allows(from_args(None, {}).crossplane_version) is installs
