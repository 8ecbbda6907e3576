"""A solved plan as something to run: engine launch commands and Kubernetes manifests (`planopt deploy`).

    engines     each engine's launch command and arguments from a workload's chosen config
    manifests   Deployments (LeaderWorkerSets), Services, autoscalers, batch CronJobs, namespaces
    build       the whole bundle for one result: files by path, and what could not be emitted

It reads results (and the plan and catalogs they came from), so it sits beside report in the pipeline.
"""
