"""An Evolution tree with Workers (issue 27, item 4): each generation's population is evaluated across worker
processes, and the run is the one-process run bit for bit: the same history (but its wall seconds), champion and
model file, for GA, NEAT, GA with novelty (the walker's tree) and physics copies; a worker killed mid-generation is
replaced, its individuals evaluated again, and the result is still the same; the learner's own scene is never
stepped; the panel's Workers (with Stop and Resume) and ``drla train --workers`` (with its checkpoints, ``--resume``
and ``--ray``) train it too. Tiny runs: a few individuals, two or three generations."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_snapshot import full_dump

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
CARTPOLE = ROOT / "scenes" / "cartpole_rb" / "cartpole_rb.blend"
WALKER = ROOT / "scenes" / "walker" / "walker.blend"


def _tree(blend, tmp_path, novelty=False, copies=1, **agent):
    """Open ``blend``, set the Evolution Agent's settings (and the Environment node's Copies) and save the file as
    the workers' copy: (scene, tree, the copy's path)."""
    bpy.ops.wm.open_mainfile(filepath=str(blend), load_ui=False)
    tree = next(t for t in bpy.data.node_groups if t.bl_idname == "DRLA_NodeTree")
    node = next(n for n in tree.nodes if n.bl_idname == "DRLA_EvolutionAgentNode")
    for name, value in agent.items():
        setattr(node, name, value)
    next(n for n in tree.nodes if n.bl_idname == "DRLA_EnvironmentNode").copies = copies
    if node.method == 'NEAT':  # NEAT evolves its own topology: no Network node
        for link in [lk for lk in tree.links if lk.to_node == node and lk.from_node.bl_idname == "DRLA_NetworkNode"]:
            tree.links.remove(link)
    if novelty:  # scored by novelty of the final position (the first two observation values), fitness a little
        linked = tree.nodes.new("DRLA_NoveltyNode")
        linked.values, linked.k, linked.fitness_weight = 2, 3, 0.3
        tree.links.new(linked.outputs[0], node.inputs["Novelty"])
    copy = tmp_path / "workers.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(copy), copy=True, compress=False)
    return bpy.context.scene, tree, copy


def _run(scene, tree, copy, tmp_path, workers, generations, kill=False):
    """Evolve ``generations`` in this process (``workers`` 0) or on ``workers`` processes; (history without its wall
    seconds, champion fitness, the model file's bytes, the job)."""
    from drla_ext.addon.runs import build, evolution_workers
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree.compiler import compile_tree
    from drla_ext.drla_core.io.model_io import save_model

    compiled = compile_tree(tree, scene)
    copies = compiled.env.copies  # each worker's, or this process's (the learner's own scene: one, never stepped)
    with restored_scene(scene):
        env = build.build_env(compiled, scene, copies=1 if workers else copies)
        try:
            if workers:
                job = evolution_workers.build_job(compiled, env, str(copy), workers=workers, copies=copies, seed=3,
                                                  total_steps=generations)
            else:
                job = build.build_job(compiled, env, seed=3, total_steps=generations)
            before = full_dump(scene)  # (with workers, this process's scene is never stepped)
            if kill:  # a worker dies while it holds individuals of the first generation
                while not any(w.pending for w in job.farm.workers):
                    job.advance(max_seconds=0.05)
                victim = next(w for w in job.farm.workers if w.pending)
                victim.handle[0].kill()
            while not job.done:
                job.advance(max_seconds=0.5)
            job.finish()
            if workers:
                assert full_dump(scene) == before
        finally:
            env.close()
    history = {k: v for k, v in job.history.items() if k != "seconds"}
    path = save_model(tmp_path / f"model_{workers}_{kill}.json", job.to_model({"created": "-"}))
    return json.dumps(history), job.champion_fitness, path.read_bytes(), job


@pytest.mark.parametrize("method", ["GA", "NEAT"])
def test_two_workers_evolve_what_one_process_does(method, ext, tmp_path):
    scene, tree, copy = _tree(CARTPOLE, tmp_path, method=method, population_size=8, generations=3, elites=1)
    alone = _run(scene, tree, copy, tmp_path, 0, 3)
    two = _run(scene, tree, copy, tmp_path, 2, 3)
    assert two[:3] == alone[:3]
    assert json.loads(two[0])["best"] and two[3].env_steps == alone[3].env_steps
    assert all(w.handle[0].poll() is not None for w in two[3].farm.workers)  # the workers ended with the run


def test_novelty_on_the_walker_with_workers_is_the_same_run(ext, tmp_path):
    scene, tree, copy = _tree(WALKER, tmp_path, novelty=True, population_size=4, generations=2, elites=1)
    alone = _run(scene, tree, copy, tmp_path, 0, 2)
    two = _run(scene, tree, copy, tmp_path, 2, 2)
    assert two[:3] == alone[:3]
    assert all(v is not None for v in json.loads(alone[0])["novelty"])
    assert np.array_equal(np.asarray(alone[3].archive.items), np.asarray(two[3].archive.items))


def test_physics_copies_play_the_same_rounds_on_each_worker(ext, tmp_path):
    """Copies 2 of the rigid-body cart-pole (one world, rounds restarting together): a worker is sent whole rounds,
    so each holds the individuals it holds in one process (an odd population: the last round is half empty)."""
    scene, tree, copy = _tree(CARTPOLE, tmp_path, copies=2, population_size=9, generations=2, elites=1)
    alone = _run(scene, tree, copy, tmp_path, 0, 2)
    two = _run(scene, tree, copy, tmp_path, 2, 2)
    assert two[:3] == alone[:3]
    assert two[3].farm.copies == 2 and len(alone[3].envs) == 1 and alone[3].envs[0].num_envs == 2


def test_a_killed_worker_is_replaced_and_the_run_is_unchanged(ext, tmp_path):
    scene, tree, copy = _tree(CARTPOLE, tmp_path, population_size=8, generations=3, elites=1)
    alone = _run(scene, tree, copy, tmp_path, 0, 3)
    killed = _run(scene, tree, copy, tmp_path, 2, 3, kill=True)
    assert killed[3].farm.restarts >= 1
    assert killed[:3] == alone[:3]
    assert any("worker restart" in line for line in killed[3].summary(1.0))


def test_the_panel_trains_an_evolution_tree_with_workers(ext, tmp_path):
    """The sidebar's Workers: the session saves a copy of the file for the workers and evolves the same run, also
    when Stop (the workers end) and Resume (new ones) cut it after its first generation."""
    from drla_ext.addon.runs import sessions
    from drla_ext.addon.runs.train import TrainSession

    histories = []
    for workers in (0, 2):
        scene, tree, _ = _tree(CARTPOLE, tmp_path, population_size=6, generations=3, elites=1)
        scene.drla.tree, scene.drla.workers = tree, workers
        session = TrainSession(scene, tree, seed=1, output_dir=str(tmp_path)).start()
        if workers:  # (stopped after whole generations: a timed tick could also finish the run on an idle machine)
            session.tick(None, max_steps=1)
            session.stop()
            assert session.state == "STOPPED" and all(w.handle[0].poll() is not None for w in session.job.farm.workers)
            session.resume()
        session.run_blocking()
        assert session.state == "DONE", scene.drla.error
        histories.append(({k: v for k, v in session.job.history.items() if k != "seconds"},
                          session.job.champion_fitness, type(session.job).__name__))
        sessions.discard_all()
    assert histories[0][:2] == histories[1][:2]
    assert histories[1][2] == "WorkersEvolutionJob" and (tmp_path / "CartPole_workers.blend").is_file()


@pytest.mark.slow
def test_cli_workers_checkpoint_and_resume(tmp_path):
    """``drla train BLEND --workers 2 --checkpoint-interval 1`` writes the population each generation; ``--resume``
    continues it to the model a straight run in one process evolves; ``--ray`` (local Ray actors) evolves it too."""
    cli = [sys.executable, "-m", "drla", "train", str(CARTPOLE), "--seed", "0", "--quiet"]

    def train(*args):
        out = subprocess.run([*cli, *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out

    out = train("--steps", "2", "--workers", "2", "--checkpoint-interval", "1", "--out", tmp_path / "w.json")
    assert "with 2 worker processes" in out.stdout and "worker 1: process" in out.stderr
    assert json.loads((tmp_path / "w_ckpt.json").read_text())["generation"] == 2
    train("--steps", "3", "--workers", "2", "--resume", tmp_path / "w_ckpt.json")
    train("--steps", "3", "--out", tmp_path / "straight.json")
    resumed, straight = (json.loads((tmp_path / n).read_text()) for n in ("w.json", "straight.json"))
    for model in (resumed, straight):
        model["meta"].pop("created")
    assert resumed == straight
    assert np.isfinite(straight["meta"]["champion_fitness"])
    pytest.importorskip("ray")
    out = train("--steps", "3", "--workers", "2", "--ray", "--out", tmp_path / "ray.json")  # Ray actors, the same run
    assert "with 2 Ray actors" in out.stdout
    on_ray = json.loads((tmp_path / "ray.json").read_text())
    on_ray["meta"].pop("created")
    assert on_ray == straight


def test_a_worker_that_cannot_open_the_file_stops_the_run_with_its_error(ext, tmp_path):
    """A worker's failure is the run's error, with the worker's message (a restart would fail the same way)."""
    from drla_ext.addon.runs import build, evolution_workers
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree.compiler import compile_tree

    scene, tree, _ = _tree(CARTPOLE, tmp_path, population_size=4, generations=1, elites=1)
    compiled = compile_tree(tree, scene)
    with restored_scene(scene):
        env = build.build_env(compiled, scene, copies=1)
        job = evolution_workers.build_job(compiled, env, str(tmp_path / "gone.blend"), workers=1, copies=1, seed=0,
                                          total_steps=1)
        try:
            with pytest.raises(RuntimeError, match=r"worker 0 failed:\n(.|\n)*gone\.blend"):
                while not job.done:
                    job.advance(max_seconds=0.5)
            assert job.farm.restarts == 0
        finally:
            job.finish()
            env.close()


def test_the_champion_check_runs_on_a_worker_and_stops_the_run_as_in_one_process(ext, tmp_path):
    """With a target return (the CLI's and the API's; a tree sets none), a candidate champion's greedy check is
    played on a worker: the same checks, the same champion and the same solved generation as one process."""
    import dataclasses

    from drla_ext.addon.runs import build, evolution_workers
    from drla_ext.addon.scene.snapshot import restored_scene
    from drla_ext.addon.tree.compiler import compile_tree

    scene, tree, copy = _tree(CARTPOLE, tmp_path, population_size=6, generations=4, elites=1)
    compiled = compile_tree(tree, scene)
    config = dataclasses.replace(build.evolution_config(compiled, 4), target_return=12.0, solve_episodes=3)
    results = []
    for workers in (0, 2):
        with restored_scene(scene):
            env = build.build_env(compiled, scene, copies=1)
            if workers:
                job = evolution_workers.WorkersEvolutionJob(
                    env, config, pool=evolution_workers.EvolutionPool(str(copy), tree.name, 1), workers=2, seed=5,
                    log=lambda text: None)
            else:
                job = build.SceneEvolutionJob(env, config, seed=5)
            try:
                while not job.done:
                    job.advance(max_seconds=0.5)
            finally:
                job.finish()
                env.close()
        results.append((job.history["evals"], job.champion_eval, job.solved, job.steps, job.env_steps,
                        job.method.genome_to_data(job.champion)))
    assert results[0][0], ("no candidate reached the target: no check was played", job.history["best"])
    assert results[1] == results[0]
