import argparse

from corpusforge.cli.train import overrides, register


def parse(*argv):
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["train", *argv])


def test_shortcuts_become_train_overrides():
    args = parse("--objective", "span", "--size", "debug", "--lr", "1e-4", "--resume", "--set", "train.seed=3")
    assert overrides(args) == ["train.seed=3", 'train.objective="span"', 'train.model.size="debug"',
                               "train.optim.lr=1.000000e-04", "train.resume=true"]
    assert overrides(parse()) == []


def test_overrides_load_into_the_config():
    from corpusforge.core.config_loader import apply_overrides, from_dict
    from corpusforge.trainers.config import TrainConfig

    args = parse("--objective", "mlm", "--lr", "1e-4", "--batch-size", "4", "--compile", "--no-progress",
                 "--data-parallel", "fsdp", "--checkpoint-activations")
    train = from_dict(TrainConfig, apply_overrides({}, overrides(args))["train"], "train")
    assert (train.objective, train.optim.lr, train.micro_batch_size, train.compile, train.progress) == \
        ("mlm", 1e-4, 4, True, False)
    assert (train.data_parallel, train.checkpoint_activations) == ("fsdp", True)
