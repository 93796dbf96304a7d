"""Served-LLM results of other harnesses, read without the tools (MLCommons endpoints, AIPerf,
GuideLLM, `vllm bench serve`), and what each one's metrics mean (`definitions`)."""
