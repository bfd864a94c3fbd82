# One image with both commands: `promop` (the operator) and `promop-config-reloader` (the sidecar).
#   docker build -t ghcr.io/promop/promop:0.1.0 .
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY promop ./promop
COPY reloader ./reloader
COPY gotime ./gotime
COPY crds ./crds
COPY examples ./examples
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
LABEL org.opencontainers.image.source="https://github.com/promop/promop" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /install /usr/local
# Upstream's StatefulSets run the reloader as /bin/prometheus-config-reloader; keep that path working.
RUN ln -s /usr/local/bin/promop-config-reloader /bin/prometheus-config-reloader \
    && promop --version && promop-config-reloader --help >/dev/null
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# nobody: the Deployment and StatefulSets also set runAsNonRoot and a read-only root filesystem.
USER 65534:65534
EXPOSE 8080
ENTRYPOINT []
CMD ["promop", "run"]
