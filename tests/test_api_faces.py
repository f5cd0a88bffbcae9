"""Every face of the public calls has the same signature: brooq (sync), brooq.aio, and the
contrib faces for SQLAlchemy and Django take the same arguments, with the same kinds and
defaults, and give the same result; a face that drifts (a parameter added to one and not
the others) fails here. Only their own first arguments differ: a psycopg connection, a
SQLAlchemy Session or Connection, or none at all and a ``using`` keyword (Django)."""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Callable
from typing import Any, get_args

import pytest

import brooq
from brooq import calls, faces

pytest.importorskip("sqlalchemy")
pytest.importorskip("django")

# Each face: its module, whether its calls are awaited, and the parameters of its own
# that stand before (the connection) or among (Django's using) the declared ones.
FACES = {
    "brooq": (False, ["conn"], []),
    "brooq.aio": (True, ["conn"], []),
    "brooq.contrib.sqlalchemy": (False, ["bind"], []),
    "brooq.contrib.sqlalchemy.aio": (True, ["bind"], []),
    "brooq.contrib.django": (False, [], ["using"]),
}


def declared(name: str) -> inspect.Signature:
    """The declaration's signature, with the result its Statement gives."""
    sig = faces.signature(getattr(calls, name))
    return sig.replace(return_annotation=get_args(sig.return_annotation)[0])


def shape(fn: Callable[..., Any], own: list[str], among: list[str]) -> inspect.Signature:
    """The signature of a face without its own parameters."""
    sig = inspect.signature(fn)
    names = list(sig.parameters)
    assert names[:len(own)] == own, f"{fn.__module__}.{fn.__name__} starts with {names[:len(own)]}"
    for extra in among:
        assert sig.parameters[extra].kind is inspect.Parameter.KEYWORD_ONLY, (fn.__module__, fn.__name__)
    kept = [p for n, p in sig.parameters.items() if n not in among][len(own):]
    return sig.replace(parameters=kept)


def test_every_declaration_is_a_public_call() -> None:
    """A declaration (a function of brooq.calls giving a Statement) is named in DECLARED,
    so that the faces below are held to it; each is a name of brooq."""
    made = {name for name, fn in vars(calls).items()
            if inspect.isfunction(fn) and fn.__module__ == calls.__name__
            and typing.get_origin(faces.signature(fn).return_annotation) is faces.Statement}
    assert made - {"declare_topic_settings"} == set(calls.DECLARED)
    assert set(calls.DECLARED) <= set(brooq.__all__)


@pytest.mark.parametrize("module", FACES)
@pytest.mark.parametrize("name", calls.DECLARED)
def test_every_face_has_every_call_with_the_declared_signature(module: str, name: str) -> None:
    awaited, own, among = FACES[module]
    face = importlib.import_module(module)
    assert name in face.__all__, f"{module}.__all__ lacks {name}"
    fn = getattr(face, name)
    assert inspect.iscoroutinefunction(fn) is awaited, f"{module}.{name}"
    want = declared(name)
    got = shape(fn, own, among)
    assert got.parameters == want.parameters, f"{module}.{name}{got} is not {name}{want}"
    assert got.return_annotation == want.return_annotation, f"{module}.{name}"
    assert fn.__doc__ and fn.__doc__.startswith(getattr(calls, name).__doc__.split("\n")[0]), \
        f"{module}.{name}: its doc is the declaration's"


# A typed task's faces (brooq.Task): the declaration's parameters after the topic and the
# payload, its own first ones (the connection and the payload) before them.
TASK_FACES = {"enqueue": ("enqueue", False), "enqueue_async": ("enqueue", True),
              "enqueue_many": ("enqueue_many", False), "enqueue_many_async": ("enqueue_many", True)}


@pytest.mark.parametrize("method", TASK_FACES)
def test_a_tasks_enqueue_takes_the_declared_options(method: str) -> None:
    name, awaited = TASK_FACES[method]
    fn = getattr(brooq.Task, method)
    assert inspect.iscoroutinefunction(fn) is awaited, method
    own = list(inspect.signature(fn, eval_str=True).parameters.values())
    want = declared(name)
    assert [p.name for p in own[:3]] == ["self", "conn", list(want.parameters)[1]], method
    assert own[3:] == list(want.parameters.values())[2:], f"Task.{method} drifted from {name}{want}"
    assert inspect.signature(fn, eval_str=True).return_annotation == want.return_annotation, method


def test_the_task_names_are_public() -> None:
    for name in ("Task", "Registry", "Schedule", "PayloadMismatch", "task", "periodic"):
        assert name in brooq.__all__ and getattr(brooq, name) is getattr(brooq.tasks, name), name
    assert brooq.Worker.register is brooq.tasks.register
