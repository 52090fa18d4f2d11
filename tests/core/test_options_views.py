"""ViewCachingOptions: the same views, values and copies as Beam's PipelineOptions, each view made once."""
from __future__ import annotations

import copy
import pickle

from apache_beam.options.pipeline_options import (DebugOptions, DirectOptions, PipelineOptions, StandardOptions,
                                                  TypeOptions)

from corpusforge.core.options_views import ViewCachingOptions

FLAGS = ["--runner=DirectRunner", "--direct_num_workers=2", "--no_pipeline_type_check", "--experiments=a"]


def test_views_are_made_once_and_read_like_beams():
    options, plain = ViewCachingOptions(FLAGS), PipelineOptions(FLAGS)
    assert options.view_as(TypeOptions) is options.view_as(TypeOptions)
    assert plain.view_as(TypeOptions) is not plain.view_as(TypeOptions)  # what Beam does: a new view per call
    for cls in (StandardOptions, DirectOptions, TypeOptions, DebugOptions):
        assert vars(options.view_as(cls)._visible_options) == vars(plain.view_as(cls)._visible_options)
    assert options.get_all_options() == plain.get_all_options()


def test_a_value_set_through_one_view_is_seen_by_every_view():
    options = ViewCachingOptions(FLAGS)
    standard = options.view_as(StandardOptions)
    options.view_as(DirectOptions).direct_num_workers = 3
    standard.runner = None
    assert options.view_as(DirectOptions).direct_num_workers == 3
    assert options.get_all_options()["direct_num_workers"] == 3
    assert options.view_as(StandardOptions).runner is None and standard.runner is None


def test_copies_and_pickles_carry_the_options_not_the_views():
    options = ViewCachingOptions(FLAGS)
    options.view_as(DirectOptions).direct_num_workers = 4
    for other in (copy.deepcopy(options), pickle.loads(pickle.dumps(options))):
        assert "_views_by_class" not in vars(other)
        assert other.get_all_options() == options.get_all_options()
        other.view_as(DirectOptions).direct_num_workers = 5  # a copy's views write the copy's values only
        assert other.view_as(DirectOptions).direct_num_workers == 5
        assert options.view_as(DirectOptions).direct_num_workers == 4
