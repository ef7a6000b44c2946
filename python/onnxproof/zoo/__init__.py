"""`onnxproof zoo`: prove many models, each with the same `onnxproof pipeline`, on Ray (a local
instance or a cluster) or in local processes, with a content-addressed cache, CI shards and one
dashboard (docs/zoo.md).

One concern per module: `manifest` (ZOO.toml -> Model entries), `cache` (keys and stored runs),
`task` (one model's pipeline as a child process -> a row), `execution` (local processes or Ray
tasks), `dashboard` (index.json, index.html), `merge` (shard outputs -> one zoo), `files` (the zoo
folder, atomic writes), `cli` (`python -m onnxproof.zoo run|merge`, which `onnxproof zoo` starts).
"""
