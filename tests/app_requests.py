"""Asking the app as the JSON API's and the ask page's clients do, and reading
its streamed answers."""

import json


def post(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def events_of(response) -> list[tuple[str, dict]]:
    events = []
    for block in b"".join(response.streaming_content).decode().split("\n\n"):
        if block.strip():
            name, data = block.split("\n", 1)
            events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events
