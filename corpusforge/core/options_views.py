"""Beam ``PipelineOptions`` whose ``view_as`` views are made once per options class.

Beam's ``view_as(cls)`` builds a new ``cls`` each time: an argparse parser of that class's options and a parse
of every flag. Beam calls it for each transform it applies (``TypeOptions`` twice), ~900 times while a build's
graph is wired, which was ~0.35 s of every build's start-up. A view holds nothing of its own (every option
value lives in the ``_all_options`` dict that all views of one options object share, which is how Beam keeps
them in step), so handing out the same view again reads and writes exactly what a fresh one would.
The views are not part of the object's pickled or copied state: a copy (``beam.Pipeline`` deep-copies its
options) or a worker's unpickled copy starts with none and makes its own.
"""
from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

_VIEWS = "_views_by_class"


class ViewCachingOptions(PipelineOptions):
    # Defines no options: Beam's option registry (every PipelineOptions subclass) gains no flags from it.

    def view_as(self, cls):
        views = self.__dict__.setdefault(_VIEWS, {})  # not through __setattr__, which allows only Beam's names
        view = views.get(cls)
        if view is None:
            view = views[cls] = super().view_as(cls)
        return view

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop(_VIEWS, None)
        return state
