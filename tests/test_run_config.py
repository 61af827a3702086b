"""The typed run config: a frozen RunConfig nesting TrainConfig, EvalConfig and each method's typed Args, its
record form, and every bad key or type refused naming it before any compute."""

import dataclasses
import inspect
import json

import pytest

from vlp_lib import methods, runs
from vlp_lib.methods.args import MethodArgs
from vlp_lib.run_config import RunConfig, make_config
from vlp_lib.suite import EvalConfig
from vlp_lib.train import TrainConfig

TINY = dict(train_size=128, batch_size=32, task_train=40, task_test=20, retrieval_images=20, eval_tasks=["shapes10"])


def test_make_config_gives_a_frozen_typed_config():
    config = make_config("smoke", "protoclip", 3, episode_size=64, method_kwargs={"k": 8}, **TINY)
    assert (
        isinstance(config, RunConfig) and isinstance(config.train, TrainConfig) and isinstance(config.eval, EvalConfig)
    )
    assert config.train.episode_size == 64 and config.episode_size == 64 and config.train.seed == config.seed == 3
    assert config.method_args.k == 8 and config.method_args.head_dim == 64  # the default, from the Args class
    assert config.eval.tasks == ("shapes10",) and config.eval.scale == "smoke"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.seed = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.train.lr = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("method", methods.available_methods())
def test_record_form_round_trips_for_every_method(method):
    cls = methods.method_class(method)
    kwargs = {}
    if method == "dimefm":
        kwargs = {"teacher": make_config("smoke", "clip", 0, **TINY).to_dict()}
    if method == "iclip" or method == "unicl":
        kwargs = {"ratio": 0.5, "class_data": {"n": 30, "seed": 5, "shapes": ["star", "circle"]}}
    config = make_config("smoke", method, 1, method_kwargs=kwargs, **TINY)
    record = json.loads(json.dumps(config.to_dict()))  # what the store writes and reads
    assert RunConfig.from_dict(record) == config
    assert runs.config_hash(record) == runs.config_hash(config.to_dict())
    assert isinstance(config.method_args, cls.Args)


def test_record_form_keeps_only_arguments_that_differ_from_their_defaults():
    default = make_config("smoke", "protoclip", 0, **TINY)
    explicit = make_config("smoke", "protoclip", 0, method_kwargs={"head_dim": 64, "k": None}, **TINY)
    assert default == explicit and default.to_dict()["method_kwargs"] == {}
    changed = default.replace(method_kwargs={"target_temperature": 0.01})
    assert changed.to_dict()["method_kwargs"] == {"target_temperature": 0.01}
    assert changed.method_args.target_temperature == 0.01 and changed.train == default.train


def test_replace_checks_again():
    config = make_config("smoke", "clip", 0, **TINY)
    assert config.replace(seed=2).seed == 2 and config.replace(seed=2).train.seed == 2
    with pytest.raises(ValueError, match="batch_size"):
        config.replace(batch_size=0)
    with pytest.raises(ValueError, match="method_kwargs: unknown"):
        config.replace(method="clip", method_kwargs={"k": 3})


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"episode_sizes": 10}, "unknown parameter"),
        ({"method_kwargs": {"kk": 1}}, "unknown ProtoCLIP argument.*kk"),
        ({"method_kwargs": {"k": "many"}}, "k must be int or None"),
        ({"method_kwargs": {"use_pbt": 1}}, "use_pbt must be True or False"),
        ({"method_kwargs": {"kmeans_init": "spectral"}}, "kmeans_init"),
        ({"method_kwargs": {"head_dim": 1.5}}, "head_dim must be an integer"),
        ({"method_kwargs": "k=3"}, "method_kwargs must be a dict"),
        ({"batch_size": "32"}, "batch_size"),
        ({"eval_tasks": "shapes10"}, "eval_tasks"),
        ({"world_seed": -1}, "world_seed"),
    ],
)
def test_bad_keys_and_types_are_refused_naming_them(overrides, match):
    with pytest.raises(ValueError, match=match):
        make_config("smoke", "protoclip", 0, **{**TINY, **overrides})


def test_a_method_without_arguments_refuses_any():
    with pytest.raises(ValueError, match="clip argument.*it takes no arguments"):
        make_config("smoke", "clip", 0, method_kwargs={"k": 1}, **TINY)
    assert MethodArgs.from_dict(None) == MethodArgs() and MethodArgs().to_dict() == {}


@pytest.mark.parametrize("method", methods.available_methods())
def test_each_default_is_written_once(method):
    """Every constructor parameter that is also an argument of the run config takes its default from ``Args``."""
    cls = methods.method_class(method)
    args = {f.name: f for f in dataclasses.fields(cls.Args)}
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        if name in args and parameter.default is not inspect.Parameter.empty and parameter.default is not None:
            field = args[name]
            default = field.default if field.default is not dataclasses.MISSING else field.default_factory()  # type: ignore[misc]
            assert parameter.default == default, (
                f"{method}.{name}: constructor {parameter.default!r} vs Args {default!r}"
            )
