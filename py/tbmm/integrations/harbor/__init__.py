"""Harbor integration: the verifier entry point that writes Harbor's reward files
(`tbmm.integrations.harbor.reward`), the dataset export (`tbmm.integrations.harbor.export`), and the facts about
Harbor's task and job layouts both rely on (`tbmm.integrations.harbor.layout`).

Harbor (the framework that runs Terminal-Bench style tasks on local and cloud
environments) is not a dependency: export writes plain files, and the verifier entry point
runs inside the verifier image with nothing but `tbmm` installed.
"""
