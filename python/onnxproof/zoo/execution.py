"""Runs the models that the cache does not answer: as Ray tasks (a local instance started here,
or the cluster at --ray-address) or, without Ray, as local processes (--workers at a time).
Rows are handed to `on_row` as they finish, in whatever order that is."""
import concurrent.futures
import logging
import os

from .task import end_live_pipelines, run_model

# A local Ray instance's object store: the tasks return small rows, the runs go to disk.
_OBJECT_STORE_BYTES = 128 << 20
_GIB = 1 << 30


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


def _task_resources(model, total_memory):
    """num_cpus 1, the model's memory class (its memory_gb, at most what the cluster has), and a
    GPU when a CUDA provider or target is asked for."""
    memory = int(model.memory_gb * _GIB)
    if total_memory:
        memory = min(memory, int(total_memory))
    return {"num_cpus": 1, "memory": memory, "num_gpus": 1 if model.needs_gpu else 0}


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


def _collect(ray, pending, on_row):
    """Hands each task's row to `on_row` as it finishes; a task that failed twice (its worker lost)
    or raised becomes an error row."""
    from .task import _error_row
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for reference in done:
            model = pending.pop(reference)
            try:
                row = ray.get(reference)
            except Exception as error:  # ray.exceptions.RayError and what the task raised
                # A task's error ends with the exception that stopped it (its first line names the task).
                lines = [line.strip() for line in str(error).splitlines() if line.strip()]
                last = lines[-1][:240] if lines else ""
                row = _error_row(model, 0.0, f"Ray task failed ({type(error).__name__}): {last}", None)
            on_row(model, row)


def run_ray(models, engine, out, workers, address, on_row):
    """Each model a Ray task (max_retries=1: a worker lost is tried once more); a task that fails
    twice or cannot run becomes an error row."""
    import ray
    started = _start_ray(ray, workers, address)
    try:
        total_memory = ray.cluster_resources().get("memory")
        remote = ray.remote(max_retries=1)(_prove_on_worker)
        pending = {remote.options(**_task_resources(model, total_memory)).remote(model, engine, out): model
                   for model in models}
        try:
            _collect(ray, pending, on_row)
        except BaseException:  # Ctrl-C, SIGTERM: a cancelled task ends its pipeline (run_model)
            for reference in pending:
                ray.cancel(reference)
            ray.wait(list(pending), num_returns=len(pending), timeout=15)
            raise
    finally:
        if started:
            ray.shutdown()
