from promop.cli import main

# Guarded: a spawned worker process (promop.operator.render_pool) imports this module as __mp_main__
if __name__ == "__main__":
    raise SystemExit(main())
