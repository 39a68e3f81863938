#!/usr/bin/env python3
"""Session 40: batch files for logprobs on a lane. Writes requests.jsonl: 24 requests (12 prompts,
greedy and sampled at temperature 0.9), each twice: with logprobs (completions: 5; chat: true with
top_logprobs 5) and without. compare.py then checks, per lane, that asking changes no token and how
far each lane's logprobs are from the cpu lane's."""
import json, sys

prompts = ["def fib(n):", "import os\n", "class Stack:", "for i in range(", "# parse the file\n",
           "def add(a, b):\n    return", "x = [", "while True:", "with open(", "print(", "try:\n", "lambda x:"]
out = open(sys.argv[1], "w")
for i, p in enumerate(prompts):
    for t in (0, 0.9):
        for lp in (False, True):
            chat = i % 3 == 0
            body = {"max_tokens": 24, "temperature": t, "seed": 100 + i, "ignore_eos": True, "return_token_ids": True}
            if chat:
                body["messages"] = [{"role": "user", "content": p}]
                if lp:
                    body["logprobs"] = True
                    body["top_logprobs"] = 5
            else:
                body["prompt"] = p
                if lp:
                    body["logprobs"] = 5
            out.write(json.dumps({"custom_id": f"{i}-{t}-{int(lp)}", "method": "POST",
                                  "url": "/v1/chat/completions" if chat else "/v1/completions", "body": body}) + "\n")
