"""Beam's DaskRunner with two fixes that a real pipeline needs (apache-beam 2.77):

1. A ParDo with tagged outputs (``with_outputs``) hands *all* of its outputs to every consumer: Beam's
   visitor maps a PCollection to its producer's whole bag. Here each consumer gets only its own tag.
2. Only the last transform's bag is computed, so a pipeline with several sinks silently skips all but
   one. Here every leaf (a bag no other transform consumes) is computed.

``pipeline.beam_options`` swaps this class in when the config or CLI asks for ``DaskRunner``. Needs the
``dask`` extra: ``pip install 'corpusforge[dask]'``.
"""
from __future__ import annotations

import collections
import dataclasses

import apache_beam
from apache_beam import TaggedOutput, pvalue
from apache_beam.internal import pickler
from apache_beam.pipeline import AppliedPTransform, PipelineVisitor
from apache_beam.runners.common import DoFnContext, DoFnInvoker, DoFnSignature, _OutputHandler
from apache_beam.runners.dask import dask_runner as beam_dask
from apache_beam.runners.dask import transform_evaluator as te
from apache_beam.runners.dask.transform_evaluator import DaskBagWindowedIterator, Flatten, NoOp
from apache_beam.transforms.core import DoFn
from apache_beam.transforms.sideinputs import SideInputMap


def _run_bundle(items, pickled_fn, window_fn, context_label, side_inputs, args, kwargs):
    """One Dask partition through the DoFn, keeping each output's tag (Beam's version drops it).

    The DoFn travels pickled and is unpickled per bundle, as on every other runner: a DoFn whose setup()
    built an unpicklable model (fastText, Presidio) must never be serialised again after setup."""
    transform_fn = pickler.loads(pickled_fn)
    receivers = te.OneReceiver()  # fresh per bundle: Beam's shares one list across bundles
    handler = _OutputHandler(window_fn=window_fn, main_receivers=receivers[None], tagged_receivers=receivers,
                             per_element_output_counter=None, output_batch_converter=None,
                             process_yields_batches=False, process_batch_yields_elements=False)
    invoker = DoFnInvoker.create_invoker(
        DoFnSignature(transform_fn), handler, context=DoFnContext(context_label, state=None),
        side_inputs=side_inputs, input_args=args, input_kwargs=kwargs, user_state_context=None,
        bundle_finalizer_param=DoFn.BundleFinalizerParam())
    invoker.invoke_setup()
    invoker.invoke_start_bundle()
    for item in items:
        invoker.invoke_process(item)
    invoker.invoke_finish_bundle()
    invoker.invoke_teardown()
    return [TaggedOutput(v.tag, v.value.value) if isinstance(v, TaggedOutput) else v.value for v in receivers.values]


class _RoutedParDo(te.DaskBagOp):
    def apply(self, input_bag, side_inputs=None):
        transform = self.transform
        args, kwargs = transform.raw_side_inputs
        main_input = next(iter(self.applied.main_inputs.values()))
        window_fn = main_input.windowing.windowfn if hasattr(main_input, "windowing") else None
        return input_bag.map(te.get_windowed_value, window_fn).map_partitions(
            _run_bundle, pickler.dumps(transform.fn), window_fn, transform.label, side_inputs, list(args), kwargs)


TRANSLATIONS = {**te.TRANSLATIONS, apache_beam.ParDo: _RoutedParDo}


def _is_main(item) -> bool:
    return not isinstance(item, TaggedOutput)


def _has_tag(tag):
    def test(item) -> bool:
        return isinstance(item, TaggedOutput) and item.tag == tag
    return test


def _untag(item):
    return item.value


def _bag_of(bags, pcoll):
    """The bag holding exactly ``pcoll``'s elements (its producer's bag, filtered to its tag)."""
    producer = pcoll.producer
    bag = bags.get(producer)
    if bag is None or not isinstance(producer.transform, apache_beam.ParDo):
        return bag
    if pcoll.tag is None:
        return bag.filter(_is_main)
    return bag.filter(_has_tag(pcoll.tag)).map(_untag)


class DaskRunner(beam_dask.DaskRunner):
    """Executes a pipeline on a Dask distributed client (tagged outputs and all sinks handled)."""

    @staticmethod
    def to_dask_bag_visitor(bag_kwargs=None) -> PipelineVisitor:
        bag_kwargs = bag_kwargs or {}

        @dataclasses.dataclass
        class RoutingVisitor(PipelineVisitor):
            bags: dict = dataclasses.field(default_factory=collections.OrderedDict)
            consumed: set = dataclasses.field(default_factory=set)

            def visit_transform(self, node: AppliedPTransform) -> None:
                op = TRANSLATIONS.get(node.transform.__class__, NoOp)(node, bag_kwargs=bag_kwargs)
                kwargs = {"input_bag": None, "side_inputs": None}
                inputs = list(node.inputs)
                if inputs:
                    bag_inputs = []
                    for value in inputs:
                        if isinstance(value, pvalue.PBegin):
                            bag_inputs.append(None)
                        elif value.producer in self.bags:
                            self.consumed.add(value.producer)
                            bag_inputs.append(_bag_of(self.bags, value))
                    single = len(bag_inputs) == 1 and not isinstance(op, Flatten)
                    kwargs["input_bag"] = bag_inputs[0] if single else bag_inputs
                if node.side_inputs:
                    side = []
                    for si in node.side_inputs:
                        self.consumed.add(si.pvalue.producer)
                        side.append(SideInputMap(type(si), si._view_options(),
                                                 DaskBagWindowedIterator(_bag_of(self.bags, si.pvalue), si._window_mapping_fn)))
                    kwargs["side_inputs"] = side
                self.bags[node] = op.apply(**kwargs)

            def leaves(self):
                return [bag for node, bag in self.bags.items() if node not in self.consumed and bag is not None]

        return RoutingVisitor()

    def run_pipeline(self, pipeline, options):
        import dask
        import dask.distributed as ddist

        dask_options = options.view_as(beam_dask.DaskOptions).get_all_options(drop_default=True, current_only=True)
        bag_kwargs = beam_dask.DaskOptions._extract_bag_kwargs(dask_options)
        client = ddist.Client(**dask_options)
        pipeline.replace_all(beam_dask.dask_overrides())
        visitor = self.to_dask_bag_visitor(bag_kwargs)
        pipeline.visit(visitor)
        futures = client.compute(list(dask.optimize(*visitor.leaves())))
        return beam_dask.DaskRunnerResult(client, futures)
