"""Kubernetes protobuf request bodies, as kubectl 1.32's typed clients send them."""

from __future__ import annotations

import pytest

from lockwright.devcluster import protobuf

# Captured from `kubectl create namespace n1`, `create configmap c1 --from-literal=a=b
# --from-literal=c=d`, `create secret generic s1 --from-literal=k=v`, `create deployment d1
# --image=nginx:1 --replicas=2 --port=80` and `create service clusterip svc1 --tcp=80:8080`.
NAMESPACE = (b'k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x1a\n\x12\n\x02n1\x12\x00\x1a\x00"\x00*'
     b'\x002\x008\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00"\x00')
CONFIGMAP = (b'k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12$\n\x12\n\x02c1\x12\x00\x1a\x00"\x00*'
     b'\x002\x008\x00B\x00\x12\x06\n\x01a\x12\x01b\x12\x06\n\x01c\x12\x01d\x1a\x00"\x00')
SECRET = (b'k8s\x00\n\x0c\n\x02v1\x12\x06Secret\x12\x1e\n\x12\n\x02s1\x12\x00\x1a\x00"\x00*'
     b'\x002\x008\x00B\x00\x12\x06\n\x01k\x12\x01v\x1a\x00\x1a\x00"\x00')
DEPLOYMENT = (b'k8s\x00\n\x15\n\x07apps/v1\x12\nDeployment\x12\xb6\x01\n\x1d\n\x02d1\x12\x00\x1a'
     b'\x00"\x00*\x002\x008\x00B\x00Z\t\n\x03app\x12\x02d1\x12\x86\x01\x08\x02\x12\x0b'
     b'\n\t\n\x03app\x12\x02d1\x1am\n\x1b\n\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B'
     b'\x00Z\t\n\x03app\x12\x02d1\x12N\x120\n\x05nginx\x12\x07nginx:1*\x002\n\n\x00\x10'
     b'\x00\x18P"\x00*\x00B\x00j\x00r\x00\x80\x01\x00\x88\x01\x00\x90\x01\x00\xa2\x01'
     b'\x00\x1a\x002\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00\x8a\x01\x00\x9a\x01'
     b'\x00\xc2\x01\x00"\x02\n\x00(\x008\x00\x1a\x0c\x08\x00\x10\x00\x18\x00 \x00(\x008'
     b'\x00\x1a\x00"\x00')
SERVICE = (b'k8s\x00\n\r\n\x02v1\x12\x07Service\x12l\n!\n\x04svc1\x12\x00\x1a\x00"\x00*\x002'
     b'\x008\x00B\x00Z\x0b\n\x03app\x12\x04svc1\x12C\n\x1b\n\x0780-8080\x12\x03TCP\x18P'
     b'"\x07\x08\x00\x10\x90?\x1a\x00(\x00\x12\x0b\n\x03app\x12\x04svc1\x1a\x00"\tClust'
     b'erIP:\x00B\x00R\x00Z\x00`\x00h\x00\x1a\x02\n\x00\x1a\x00"\x00')


def test_namespace() -> None:
    assert protobuf.decode(NAMESPACE) == {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "n1"}}


def test_configmap_and_secret() -> None:
    assert protobuf.decode(CONFIGMAP)["data"] == {"a": "b", "c": "d"}
    secret = protobuf.decode(SECRET)
    assert (secret["kind"], secret["data"]) == ("Secret", {"k": "dg=="})


def test_deployment() -> None:
    dep = protobuf.decode(DEPLOYMENT)
    assert dep["apiVersion"] == "apps/v1" and dep["metadata"]["labels"] == {"app": "d1"}
    assert dep["spec"]["replicas"] == 2
    assert dep["spec"]["selector"] == {"matchLabels": {"app": "d1"}}
    assert dep["spec"]["template"]["spec"]["containers"] == [
        {"name": "nginx", "image": "nginx:1", "ports": [{"containerPort": 80}]}]


def test_service_int_or_string_port() -> None:
    svc = protobuf.decode(SERVICE)
    assert svc["spec"]["ports"] == [{"name": "80-8080", "protocol": "TCP", "port": 80,
                                      "targetPort": 8080}]
    assert svc["spec"]["type"] == "ClusterIP"


def test_not_protobuf_and_unknown_kinds() -> None:
    assert not protobuf.is_protobuf(b'{"kind": "Namespace"}')
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(b"{}")
    unknown = protobuf.MAGIC + b"\n\x0c\n\x02v1\x12\x06Widget\x12\x00"
    with pytest.raises(protobuf.ProtobufError, match="v1/Widget"):
        protobuf.decode(unknown)
