"""Beam's DaskRunner with two fixes that a real pipeline needs (apache-beam 2.77):

1. A ParDo with tagged outputs (``with_outputs``) hands *all* of its outputs to every consumer: Beam's
   visitor maps a PCollection to its producer's whole bag. Here each consumer gets only its own tag.
2. Only the last transform's bag is computed, so a pipeline with several sinks silently skips all but
   one. Here every leaf (a bag no other transform consumes) is computed.
3. A side input is a lazy bag that each task iterates, i.e. a nested ``compute`` inside a worker task:
   it recomputes the side input's whole upstream once per partition and, with every worker thread
   blocked waiting on its own nested compute, stalls the cluster (CombineGlobally nests two side
   inputs). Here a side input is an ordinary dependency of the consuming tasks in the one task graph:
   the scheduler computes it once, before them, and hands each task its materialised elements.
4. A GroupByKey keeps its input's partition count and a Flatten adds its inputs' counts, so the counts
   compound through the pipeline (the dedup stage's joins and component rounds reach over a thousand
   partitions and ~70,000 tasks on a 120-document corpus; the graph optimisation alone takes minutes),
   while a corpus read from a few files stays in one partition, on one worker. Here every GroupByKey
   writes a fixed number of partitions, and a Flatten merges its inputs' partitions down to that
   number: ``--dask_npartitions`` or, by default, twice the cluster's worker threads (like Spark's
   default parallelism).
5. ``dask.optimize`` was applied to each leaf separately and the results computed together, which can
   give one key two different fused tasks; here all leaves are computed (and optimised) as one graph.

``corpusforge.core.beam_options`` swaps this class in when the config or CLI asks for ``DaskRunner``. Needs the
``dask`` extra: ``pip install 'corpusforge[dask]'``.
"""
from __future__ import annotations

import collections
import dataclasses
import threading

import apache_beam
from apache_beam import TaggedOutput, pvalue
from apache_beam.internal import pickler
from apache_beam.pipeline import AppliedPTransform, PipelineVisitor
from apache_beam.runners.common import DoFnContext, DoFnInvoker, DoFnSignature, _OutputHandler
from apache_beam.runners.dask import dask_runner as beam_dask
from apache_beam.runners.dask import transform_evaluator as te
from apache_beam.runners.dask.overrides import _Flatten, _GroupByKeyOnly
from apache_beam.runners.dask.transform_evaluator import Flatten, NoOp
from apache_beam.runners.runner import PipelineState
from apache_beam.transforms.core import DoFn
from apache_beam.transforms.sideinputs import SideInputMap


class _SideInputSpec:
    """How to view one side input and how many of the task's trailing arguments are its partitions.

    A plain class, not a dataclass: dask unpacks dataclass arguments into tasks of their own."""

    def __init__(self, view_class, view_options, window_mapping_fn, npartitions):
        self.view_class, self.view_options, self.window_mapping_fn = view_class, view_options, window_mapping_fn
        self.npartitions = npartitions


def _side_input_maps(specs, partitions):
    """SideInputMaps over the side inputs' computed partitions (in the order of ``specs``)."""
    maps, start = [], 0
    for spec in specs:
        parts, start = partitions[start:start + spec.npartitions], start + spec.npartitions
        values = [te.get_windowed_value(v, spec.window_mapping_fn) for part in parts for v in part]
        maps.append(SideInputMap(spec.view_class, spec.view_options, values))
    return maps


# Set-up DoFns not in use, per pickled DoFn, in this worker process. Beam reuses a DoFn instance for many
# bundles (setup() once, never two bundles at a time); Beam's Dask translation ran setup() and teardown()
# for every partition, i.e. loaded the quality stage's fastText models once per partition.
_IDLE_DOFNS: dict[bytes, list] = collections.defaultdict(list)
_IDLE_LOCK = threading.Lock()


def _acquire_dofn(pickled_fn: bytes):
    with _IDLE_LOCK:
        idle = _IDLE_DOFNS[pickled_fn]
        if idle:
            return idle.pop()
    fn = pickler.loads(pickled_fn)
    signature = DoFnSignature(fn)
    if list(signature.get_setup_contexts()):
        raise NotImplementedError(f"{type(fn).__name__}: DoFn.SetupContextParam is not supported on the DaskRunner")
    signature.setup_lifecycle_method.method_value()
    return fn


def _release_dofn(pickled_fn: bytes, fn) -> None:
    with _IDLE_LOCK:
        _IDLE_DOFNS[pickled_fn].append(fn)


def _run_bundle(items, pickled_fn, window_fn, context_label, args, kwargs, side_specs, *side_partitions):
    """One Dask partition through the DoFn, keeping each output's tag (Beam's version drops it).

    The DoFn travels pickled, as on every other runner: a DoFn whose setup() built an unpicklable model
    (fastText, Presidio) is never serialised again after setup; set-up instances are reused by later
    bundles in the same worker. A failed bundle's DoFn is dropped, not reused.
    ``side_partitions`` are the side inputs' partitions, already computed: dependencies of this task."""
    transform_fn = _acquire_dofn(pickled_fn)
    side_inputs = _side_input_maps(side_specs, side_partitions) if side_specs else None
    receivers = te.OneReceiver()  # fresh per bundle: Beam's shares one list across bundles
    handler = _OutputHandler(window_fn=window_fn, main_receivers=receivers[None], tagged_receivers=receivers,
                             per_element_output_counter=None, output_batch_converter=None,
                             process_yields_batches=False, process_batch_yields_elements=False)
    invoker = DoFnInvoker.create_invoker(
        DoFnSignature(transform_fn), handler, context=DoFnContext(context_label, state=None),
        side_inputs=side_inputs, input_args=args, input_kwargs=kwargs, user_state_context=None,
        bundle_finalizer_param=DoFn.BundleFinalizerParam())
    invoker.invoke_start_bundle()
    for item in items:
        invoker.invoke_process(item)
    invoker.invoke_finish_bundle()
    _release_dofn(pickled_fn, transform_fn)
    return [TaggedOutput(v.tag, v.value.value) if isinstance(v, TaggedOutput) else v.value for v in receivers.values]


class _RoutedParDo(te.DaskBagOp):
    def apply(self, input_bag, side_inputs=None):
        """``side_inputs``: (view class, view options, window mapping fn, bag) per side input.

        Each side-input partition goes in as a top-level Delayed argument, which dask turns into a plain
        reference to that partition's key: the side input is computed once, in the same graph (sharing
        its upstream with the main input), and arrives in every task as a list, never as a bag."""
        transform = self.transform
        args, kwargs = transform.raw_side_inputs
        main_input = next(iter(self.applied.main_inputs.values()))
        window_fn = main_input.windowing.windowfn if hasattr(main_input, "windowing") else None
        specs, partitions = [], []
        for view_class, view_options, mapping_fn, bag in side_inputs or ():
            parts = bag.to_delayed(optimize_graph=False)
            specs.append(_SideInputSpec(view_class, view_options, mapping_fn, len(parts)))
            partitions.extend(parts)
        return input_bag.map(te.get_windowed_value, window_fn).map_partitions(
            _run_bundle, pickler.dumps(transform.fn), window_fn, transform.label, list(args), kwargs, specs,
            *partitions, token=self.applied.full_label)  # tasks named by the Beam step, for the dashboard


def _group_key(item):
    return item[0]


def _group_value(item):
    key, values = item
    return key, [te.defenestrate(value[1]) for value in values]


class _BoundedGroupByKey(te.DaskBagOp):
    """Beam's GroupByKey translation, writing ``shuffle_npartitions`` partitions (see fix 4)."""

    def apply(self, input_bag, side_inputs=None):
        # The task shuffle (the one that works across machines) keeps its input's partition count and
        # ignores groupby(npartitions=...), so the input is repartitioned first.
        npartitions = self.bag_kwargs.get("shuffle_npartitions") or input_bag.npartitions
        if input_bag.npartitions != npartitions:
            input_bag = input_bag.repartition(npartitions)
        return input_bag.groupby(_group_key, shuffle="tasks").map(_group_value)


class _BoundedFlatten(te.DaskBagOp):
    """Beam's Flatten translation, merging neighbouring partitions down to ``shuffle_npartitions``."""

    def apply(self, input_bag, side_inputs=None):
        bag = te.Flatten.apply(self, input_bag)
        npartitions = self.bag_kwargs.get("shuffle_npartitions")
        return bag.repartition(npartitions) if npartitions and bag.npartitions > npartitions else bag


TRANSLATIONS = {**te.TRANSLATIONS, apache_beam.ParDo: _RoutedParDo, _GroupByKeyOnly: _BoundedGroupByKey,
                _Flatten: _BoundedFlatten}


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


class _Result(beam_dask.DaskRunnerResult):
    """Closes the runner's own client once the pipeline has finished (or failed): Beam's keeps it open,
    so it outlives the cluster and logs reconnection errors (and a default LocalCluster keeps running)."""

    def wait_until_finish(self, duration=None):
        try:
            return super().wait_until_finish(duration)
        finally:
            if self.state in (PipelineState.DONE, PipelineState.FAILED):
                self.client.close()


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
                op = TRANSLATIONS.get(node.transform.__class__, NoOp)(node, bag_kwargs=dict(bag_kwargs))
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
                    single = len(bag_inputs) == 1 and not isinstance(op, (Flatten, _BoundedFlatten))
                    kwargs["input_bag"] = bag_inputs[0] if single else bag_inputs
                if node.side_inputs:
                    side = []
                    for si in node.side_inputs:
                        self.consumed.add(si.pvalue.producer)
                        side.append((type(si), si._view_options(), si._window_mapping_fn,
                                     _bag_of(self.bags, si.pvalue)))
                    kwargs["side_inputs"] = side
                self.bags[node] = op.apply(**kwargs)

            def leaves(self):
                return [bag for node, bag in self.bags.items() if node not in self.consumed and bag is not None]

        return RoutingVisitor()

    def run_pipeline(self, pipeline, options):
        import dask.distributed as ddist

        dask_options = options.view_as(beam_dask.DaskOptions).get_all_options(drop_default=True, current_only=True)
        bag_kwargs = beam_dask.DaskOptions._extract_bag_kwargs(dask_options)
        client = ddist.Client(**dask_options)
        bag_kwargs["shuffle_npartitions"] = bag_kwargs.get("npartitions") or 2 * max(1, sum(client.nthreads().values()))
        pipeline.replace_all(beam_dask.dask_overrides())
        visitor = self.to_dask_bag_visitor(bag_kwargs)
        pipeline.visit(visitor)
        # One compute over all leaves: dask optimises their merged graph once. Optimising each leaf on its
        # own (dask.optimize(*leaves)) fuses shared partitions differently per leaf, and the merged graphs
        # then hold conflicting tasks under one key (a repartitioned bag with two consumers lost elements).
        futures = client.compute(visitor.leaves())
        return _Result(client, futures)
