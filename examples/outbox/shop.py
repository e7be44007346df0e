#!/usr/bin/env python3
"""An application that writes an order and the message announcing it in one
transaction (msg-inbox(1)): the transactional outbox.

    shop.py postgres DSN SCHEMA ORDER...   orders through SCHEMA.enqueue(jsonb)
    shop.py sqlite PATH ORDER...           orders through an INSERT into msg_inbox

An ORDER ending in '!' fails after its message was written, and the whole
transaction rolls back: neither the order nor its message exists.
"""
import json
import sqlite3
import sys


class Refused(Exception):
    pass


def draft(order):
    return json.dumps({"to": "warehouse", "body": json.dumps({"order": order}),
                       "headers": {"Content-Type": "application/json"}})


def postgres(dsn, schema, orders):
    import psycopg
    with psycopg.connect(dsn) as db:
        db.execute("CREATE TABLE IF NOT EXISTS orders (name text PRIMARY KEY)")
        db.commit()
        for order in orders:
            try:
                with db.transaction():
                    db.execute("INSERT INTO orders (name) VALUES (%s)", (order,))
                    (id,) = db.execute(f"SELECT {schema}.enqueue(%s::jsonb)", (draft(order),)).fetchone()
                    if order.endswith("!"):
                        raise Refused(order)
                print(f"{order}: committed, message {id}")
            except Refused:
                print(f"{order}: rolled back")


def sqlite(path, orders):
    db = sqlite3.connect(path, isolation_level=None, timeout=30)
    db.execute("CREATE TABLE IF NOT EXISTS orders (name TEXT PRIMARY KEY)")
    for order in orders:
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO orders (name) VALUES (?)", (order,))
        db.execute("INSERT INTO msg_inbox (draft) VALUES (?)", (draft(order),))
        if order.endswith("!"):
            db.execute("ROLLBACK")
            print(f"{order}: rolled back")
        else:
            db.execute("COMMIT")
            print(f"{order}: committed")


if __name__ == "__main__":
    if sys.argv[1] == "postgres":
        postgres(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sqlite(sys.argv[2], sys.argv[3:])
