"""docker-compose.yml and the Dockerfile, checked without Docker: the Compose specification,
lockwright's settings, scaling, pinned images, start order, a non-root image whose
requirements are pyproject's."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from packaging.requirements import Requirement
from temporalio.api.enums.v1 import IndexedValueType

from lockwright.contracts import SEARCH_ATTRIBUTES
from lockwright.names import FULLY_QUALIFIED_PACKAGE
from lockwright.settings import SPECS, from_args
from tests.fixtures.compose import dockerfile

ROOT = dockerfile.ROOT
COMPOSE = ROOT / "docker-compose.yml"
SCHEMA = ROOT / "tests" / "fixtures" / "compose" / "compose-spec.json"
SETTING_NAMES = {spec.env for spec in SPECS}
LOCKWRIGHT_SERVICES = ("worker", "watcher")


def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def services() -> dict[str, dict[str, Any]]:
    return compose()["services"]  # type: ignore[no-any-return]


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def schema_validator() -> jsonschema.protocols.Validator:
    """A validator of the draft the schema's ``$schema`` names (scheme and ``#`` aside)."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))

    def bare(uri: str) -> str:
        return re.sub(r"^https?://|#$", "", uri)

    for cls in (jsonschema.Draft4Validator, jsonschema.Draft6Validator,
                jsonschema.Draft7Validator, jsonschema.Draft201909Validator,
                jsonschema.Draft202012Validator):
        if bare(cls.META_SCHEMA["$schema"]) == bare(schema["$schema"]):
            cls.check_schema(schema)
            return cls(schema)
    raise AssertionError(f"unknown draft {schema['$schema']!r}")


def test_compose_file_follows_the_compose_specification() -> None:
    validator = schema_validator()
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}"
              for e in validator.iter_errors(compose())]
    assert errors == []
    # The schema is strict about service keys: a misspelt one would not pass.
    broken = compose()
    broken["services"]["worker"]["depends_no"] = broken["services"]["worker"].pop("depends_on")
    assert not validator.is_valid(broken)


def test_every_lockwright_variable_is_a_setting() -> None:
    """No LOCKWRIGHT_* name in the compose file or the image files that the settings lack."""
    files = [COMPOSE, ROOT / "Dockerfile", *sorted((ROOT / "docker").rglob("*"))]
    named = {name for f in files if f.is_file()
             for name in re.findall(r"\bLOCKWRIGHT_[A-Z0-9_]+", f.read_text(encoding="utf-8"))}
    assert named - SETTING_NAMES == set()
    assert named, "the compose file configures lockwright through its settings"


@pytest.mark.parametrize("service", LOCKWRIGHT_SERVICES)
def test_lockwright_services_are_configured_by_valid_settings(service: str) -> None:
    env = {k: str(v) for k, v in services()[service]["environment"].items()}
    assert set(env) - SETTING_NAMES == set()
    settings = from_args(None, environ=env)  # raises on an invalid value
    assert settings.temporal_address == "temporal:7233"
    mounts = [v.rsplit(":", 2)[1] for v in services()[service]["volumes"]]
    assert settings.kubeconfig in mounts, "KUBECONFIG names the mounted kubeconfig"


@pytest.mark.parametrize("service", LOCKWRIGHT_SERVICES)
def test_lockwright_services_scale(service: str) -> None:
    """`docker compose up --scale worker=N` needs no fixed name and no fixed host port."""
    spec = services()[service]
    assert "container_name" not in spec
    assert "ports" not in spec


def test_images_are_pinned_to_explicit_tags() -> None:
    for name, spec in services().items():
        image = spec["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and "/" not in tag and tag not in ("", "latest"), (name, image)
        assert "$" not in image, f"{name}: pinned in the file, not by the environment"


def test_lockwright_services_run_this_projects_image() -> None:
    version = pyproject()["project"]["version"]
    for service in LOCKWRIGHT_SERVICES:
        assert services()[service]["image"] == f"lockwright:{version}"
        assert services()[service]["build"] == "."


def test_packages_in_the_compose_registry_can_be_named_in_spec_package() -> None:
    """The worker reaches the registry over plain HTTP by a name Crossplane accepts."""
    registry = services()["registry"]
    aliases = registry["networks"]["default"]["aliases"]
    for service in LOCKWRIGHT_SERVICES:
        insecure = from_args(None, environ=services()[service]["environment"])
        (host,) = insecure.insecure_registries
        assert host.rpartition(":")[0] in aliases and host.endswith(":5000")
        assert FULLY_QUALIFIED_PACKAGE.match(f"{host}/lockwright/provider-example:v0.1.0")


def test_start_order_waits_on_real_healthchecks_and_one_shot_jobs() -> None:
    all_services = services()
    for name, spec in all_services.items():
        for dep, cond in spec.get("depends_on", {}).items():
            assert dep in all_services, (name, dep)
            if cond["condition"] == "service_healthy":
                assert "healthcheck" in all_services[dep], (name, dep)
            if cond["condition"] == "service_completed_successfully":
                assert "restart" not in all_services[dep], f"{dep} must run once and exit"
    for service in LOCKWRIGHT_SERVICES:
        deps = all_services[service]["depends_on"]
        assert deps["temporal-init"]["condition"] == "service_completed_successfully"


def test_search_attributes_are_registered_before_lockwright_starts() -> None:
    init = services()["temporal-init"]
    declared = dict(pair.split("=") for pair in init["environment"]["SEARCH_ATTRIBUTES"].split())
    expected = {k.name: IndexedValueType.Name(k.indexed_value_type)
                .removeprefix("INDEXED_VALUE_TYPE_").title().replace("_", "")
                for k in SEARCH_ATTRIBUTES}
    assert declared == expected
    for service in LOCKWRIGHT_SERVICES:
        env = services()[service]["environment"]
        assert env["LOCKWRIGHT_TEMPORAL_NAMESPACE"] == init["environment"]["NAMESPACE"]


def test_mounted_files_exist_and_temporal_reads_its_dynamic_config() -> None:
    for name, spec in services().items():
        for volume in spec.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), (name, source)
    temporal = services()["temporal"]
    targets = [v.split(":")[1] for v in temporal["volumes"]]
    path = temporal["environment"]["DYNAMIC_CONFIG_FILE_PATH"]
    assert f"/etc/temporal/{path}" in targets  # relative to the server's /etc/temporal
    for job in ("temporal-schema", "temporal-init"):
        script = services()[job]["entrypoint"][-1].replace("/lockwright/", "docker/temporal/")
        assert (ROOT / script).is_file(), script


def test_image_runs_lockwright_as_a_non_root_user() -> None:
    final = dockerfile.stages()[-1]
    user = final.args("USER")[-1].split(":")[0]
    assert user not in ("root", "0")
    assert final.exec_form("ENTRYPOINT") == ["lockwright"]
    assert "lockwright" in pyproject()["project"]["scripts"]


def test_image_is_slim_python_311_built_in_stages() -> None:
    build, final = dockerfile.stages()
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?", final.base), final.base
    # The venv's interpreter is the base image's: both stages must use the same one.
    assert build.base == final.base and build.name
    copies = final.args("COPY")
    assert copies == [f"--from={build.name} /opt/lockwright /opt/lockwright"]
    assert not [r for r in final.args("RUN") if re.search(r"pip|apt|gcc|build", r)]


def test_image_takes_a_ca_bundle_for_pip_only_as_a_build_secret() -> None:
    build, final = dockerfile.stages()
    secret = ("--mount=type=secret,id=ca-bundle,required=false,"
              f"target={build.env()['PIP_CERT']}")
    for command, flags in zip(build.commands(), build.run_flags(), strict=True):
        if command.startswith("pip install"):
            assert flags == [secret], command
    # Nothing of the build stage but the venv reaches the final image, and no CA file.
    assert final.args("COPY") == [f"--from={build.name} /opt/lockwright /opt/lockwright"]
    assert "PIP_CERT" not in final.env() and not any(final.run_flags())


def test_image_installs_exactly_pyprojects_runtime_requirements() -> None:
    build = dockerfile.stages()[0]
    installs = [r for r in build.commands() if r.startswith("pip install")]
    assert installs == ["pip install -r requirements/image.txt", "pip install --no-deps ."]
    lines = (ROOT / "requirements" / "image.txt").read_text(encoding="utf-8").splitlines()
    image = [Requirement(ln) for ln in lines if ln.strip() and not ln.startswith("#")]
    project = [Requirement(r) for r in pyproject()["project"]["dependencies"]]

    def by_name(reqs: list[Requirement]) -> dict[str, str]:
        return {r.name.lower().replace("_", "-"): str(r.specifier) for r in reqs}

    assert by_name(image) == by_name(project), (
        "requirements/image.txt must list pyproject's [project].dependencies, no more")
    assert len(image) == len(by_name(image)), "a requirement listed twice"


def test_build_context_leaves_out_tests_and_history_but_not_the_project() -> None:
    patterns = dockerfile.ignore_patterns()
    for path in ("tests/unit/test_compose.py", "benchmarks", ".git/HEAD",
                 "lockwright/__pycache__/cli.cpython-311.pyc", "lockwright.egg-info/PKG-INFO"):
        assert dockerfile.ignored(path, patterns), path
    needed = ["pyproject.toml", "README.md", "requirements/image.txt"]
    needed += [p.rstrip("*") for p in pyproject()["tool"]["setuptools"]["packages"]["find"]
               ["include"]]
    for path in needed:
        assert not dockerfile.ignored(path, patterns), path
