from litmus_dagster.labeling.assets import audited_trajectories, labeled_trajectories

labeling_assets = [labeled_trajectories, audited_trajectories]

__all__ = ["labeling_assets"]
