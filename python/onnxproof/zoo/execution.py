"""Runs the models that the cache does not answer: as Ray tasks (a local instance started here,
or the cluster at --ray-address) or, without Ray, as local processes (--workers at a time).
Rows are handed to `on_row` as they finish, in whatever order that is."""
import concurrent.futures
import logging
import os
import time

from .task import end_live_pipelines, run_model

# A local Ray instance's object store: the tasks return small rows, the runs go to disk.
_OBJECT_STORE_BYTES = 128 << 20
_GIB = 1 << 30
# How often the driver looks up from waiting on its tasks: to see the cluster's live nodes.
_POLL_SECONDS = 5
# A task that no live node can run (its GPU's node was lost) waits for one to join at most this
# long, or its model's timeout when shorter; then it is an error row.
_UNPLACEABLE_SECONDS = 600


def ray_available():
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def run_local(models, engine, out, workers, on_row):
    """Each model's pipeline as a child process, `workers` at a time (threads only wait)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(run_model, model, engine, out): model for model in models}
        try:
            for future in concurrent.futures.as_completed(futures):
                on_row(futures[future], future.result())
        except BaseException:  # Ctrl-C, SIGTERM: end the running pipelines, start no more
            for future in futures:
                future.cancel()
            end_live_pipelines()
            raise


def _prove_on_worker(model, engine, out):
    """The Ray task: the same run_model, with the engine found on this node when the driver's
    path is not there (a cluster whose nodes install onnxproof elsewhere)."""
    if not os.path.isfile(engine):
        from ..core.engine import engine_path
        engine = engine_path()
    return run_model(model, engine, out)


def _task_resources(model, node_memory):
    """num_cpus 1, the model's memory class (its memory_gb, at most the largest node's memory: a
    request no node can hold would wait forever), and a GPU when a CUDA provider or target is asked for."""
    memory = int(model.memory_gb * _GIB)
    if node_memory:
        memory = min(memory, int(node_memory))
    return {"num_cpus": 1, "memory": memory, "num_gpus": 1 if model.needs_gpu else 0}


def _live_nodes(ray):
    """The total resources of each live node of the cluster (Ray's names: CPU, GPU, memory)."""
    return [node.get("Resources") or {} for node in ray.nodes() if node.get("Alive")]


def _fits(resources, nodes):
    """Whether one of `nodes` has, in all, what a task with `resources` asks for."""
    needed = {"CPU": resources["num_cpus"], "memory": resources["memory"], "GPU": resources["num_gpus"]}
    return any(all(node.get(name, 0) >= amount for name, amount in needed.items() if amount) for node in nodes)


def _asks_for(resources):
    gpus = resources["num_gpus"]
    return f"{resources['num_cpus']} CPU, {resources['memory'] / _GIB:.1f} GB" + (f", {gpus} GPU" if gpus else "")


def _start_ray(ray, workers, address):
    """Connects to `address`, or starts a local instance with `workers` CPUs; returns whether it
    started one (and so must stop it)."""
    settings = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING,
                "configure_logging": True}
    if address:
        ray.init(address=address, **settings)
        return False
    # The workers (started by the local instance, with this environment) import this package as
    # the driver does.
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_parent not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([package_parent, *paths])
    ray.init(num_cpus=max(1, workers), object_store_memory=_OBJECT_STORE_BYTES, **settings)
    return True


def _loss(ray, error):
    """What a task's failure says was lost (its node, its worker, its result), or None when the
    task itself raised or was cancelled: only a loss is worth a second attempt."""
    exceptions = ray.exceptions
    for kind, what in ((exceptions.NodeDiedError, "its node was lost"),
                       (exceptions.LocalRayletDiedError, "its node was lost"),
                       (exceptions.OutOfMemoryError, "Ray's memory monitor killed its worker"),
                       (exceptions.WorkerCrashedError, "its Ray worker died"),
                       (exceptions.ObjectLostError, "its result was lost with its node")):
        if isinstance(error, kind):
            return f"{what} ({type(error).__name__})"
    return None


def _failure_note(error):
    # A task's error ends with the exception that stopped it (its first line names the task).
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    last = lines[-1][:240] if lines else ""
    return f"Ray task failed ({type(error).__name__}): {last}"


class _Tasks:
    """The zoo's Ray tasks still running or waiting: each model's current attempt, what its first
    attempt lost (when it was retried), and since when no live node could run it."""

    def __init__(self, ray, submit, requests):
        self.ray = ray
        self.submit = submit  # model -> a new task's reference
        self.requests = requests  # model name -> its task's resources
        self.pending = {}  # reference -> model
        self.lost = {}  # model name -> what its first attempt lost
        self.unplaceable_since = {}  # reference -> time.monotonic() it was first seen so
        self.checked = 0.0

    def start(self, model):
        self.pending[self.submit(model)] = model

    def finish(self, reference):
        """The row of a finished task, or None when its loss was answered with a second attempt."""
        from .task import _error_row
        model = self.pending.pop(reference)
        self.unplaceable_since.pop(reference, None)
        first = self.lost.get(model.name)
        try:
            row = self.ray.get(reference)
        except Exception as error:  # ray.exceptions.RayError and what the task raised
            loss = _loss(self.ray, error)
            if loss and first is None:
                self.lost[model.name] = loss
                self.start(model)
                return None
            note = loss or _failure_note(error)
            return model, _error_row(model, 0.0, f"{first}, then on its retry: {note}" if first else note, None)
        if first:  # a pass after a retry says so: the cluster lost something on the way
            row["note"] = f"retried: {first} on its first attempt" + (f"; {row['note']}" if row["note"] else "")
        return model, row

    def give_up_unplaceable(self):
        """Rows for the tasks that no live node has been able to run for as long as their model's
        timeout (at most _UNPLACEABLE_SECONDS): Ray keeps such a task waiting forever (for a node
        to join), and a zoo must end. Looks at the cluster every _POLL_SECONDS."""
        from .task import _error_row
        now = time.monotonic()
        if now - self.checked < _POLL_SECONDS:
            return []
        self.checked = now
        try:
            nodes = _live_nodes(self.ray)
        except Exception:  # the head busy or restarting: it is asked again at the next look
            return []
        rows = []
        for reference, model in list(self.pending.items()):
            resources = self.requests[model.name]
            if _fits(resources, nodes):
                self.unplaceable_since.pop(reference, None)
                continue
            waited = now - self.unplaceable_since.setdefault(reference, now)
            if waited < min(model.timeout, _UNPLACEABLE_SECONDS):
                continue
            self.ray.cancel(reference)
            del self.pending[reference], self.unplaceable_since[reference]
            note = (f"no live node of the cluster can run it (it asks for {_asks_for(resources)}); "
                    f"gave up after {waited:.0f} s")
            first = self.lost.get(model.name)
            rows.append((model, _error_row(model, 0.0, f"{first}; {note}" if first else note, None)))
        return rows


def _collect(tasks, on_row):
    """Hands each task's row to `on_row` as it finishes; a task whose worker or node was lost is
    tried once more, and a second loss, an exception, or no node able to run it is an error row."""
    while tasks.pending:
        done, _ = tasks.ray.wait(list(tasks.pending), num_returns=1, timeout=_POLL_SECONDS)
        finished = [tasks.finish(reference) for reference in done]
        for model, row in [result for result in finished if result] + tasks.give_up_unplaceable():
            on_row(model, row)


def run_ray(models, engine, out, workers, address, on_row):
    """Each model a Ray task; a task whose worker or node is lost is submitted once more, and one
    that fails twice, raises, or finds no node able to run it becomes an error row."""
    import ray
    started = _start_ray(ray, workers, address)
    try:
        node_memory = max((node.get("memory", 0) for node in _live_nodes(ray)), default=0)
        requests = {model.name: _task_resources(model, node_memory) for model in models}
        # max_retries=0: the retry is the driver's, so that the row can say what was lost.
        remote = ray.remote(max_retries=0)(_prove_on_worker)
        tasks = _Tasks(ray, lambda model: remote.options(**requests[model.name]).remote(model, engine, out),
                       requests)
        for model in models:
            tasks.start(model)
        try:
            _collect(tasks, on_row)
        except BaseException:  # Ctrl-C, SIGTERM: a cancelled task ends its pipeline (run_model)
            for reference in tasks.pending:
                ray.cancel(reference)
            if tasks.pending:
                ray.wait(list(tasks.pending), num_returns=len(tasks.pending), timeout=15)
            raise
    finally:
        if started:
            ray.shutdown()
