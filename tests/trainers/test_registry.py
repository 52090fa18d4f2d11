"""The objective registry is the one list of objectives: the config, the CLI and the training loop follow it."""
import ast
import pathlib
import typing

from corpusforge.cli.main import make_parser
from corpusforge.trainers.config import Objective as ObjectiveName
from corpusforge.trainers.model import FAMILIES
from corpusforge.trainers.model_card import AUTO_CLASS
from corpusforge.trainers.registry import ARCH_OF_OBJECTIVE, OBJECTIVES

TRAIN_LOOP = pathlib.Path(__file__).resolve().parents[2] / "trainers" / "train.py"


def test_the_config_literal_is_the_registry():
    assert typing.get_args(ObjectiveName) == tuple(OBJECTIVES)


def test_the_cli_offers_every_registered_objective():
    parser = make_parser(only="train")
    train = parser._subparsers._group_actions[0].choices["train"]
    (objective,) = [a for a in train._actions if a.dest == "objective"]
    assert tuple(objective.choices) == tuple(OBJECTIVES)
    help_text = objective.help
    assert all(f"{name}:" in help_text for name in OBJECTIVES)


def test_each_entry_declares_a_family_that_fits_its_model():
    for name, spec in OBJECTIVES.items():
        assert spec.name == name
        if spec.family in FAMILIES:  # a Transformer recipe: its architecture is the one the objective trains
            assert FAMILIES[spec.family]["arch"] == ARCH_OF_OBJECTIVE[name], name
        assert spec.export is None or spec.export in (AUTO_CLASS.get(spec.model.arch), "ElectraForPreTraining")


def test_the_training_loop_names_no_objective():
    names = set(OBJECTIVES)
    strings = [node.value for node in ast.walk(ast.parse(TRAIN_LOOP.read_text(encoding="utf-8")))
               if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    assert not [s for s in strings if s in names]
