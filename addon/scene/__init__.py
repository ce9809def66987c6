"""The live scene as numbers and back: probes, sensors, actuators, rewards, the SceneEnv, snapshots,
camera pixels, armatures and keyframes. Never imports ``runs`` or ``ui``."""
