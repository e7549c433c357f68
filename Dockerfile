# Dockerfile - container image of headroomd (with the worker, the agent,
# the mock and the CLI), two stages on Debian 12: the build stage compiles
# with Debian's hardening flags and packs the Debian package
# (packaging/build-deb.sh); the runtime stage installs that package, so it
# holds the runtime libraries its Depends name and nothing of the build.
# docs/operations.md, "The container"; on Kubernetes, daemon and agents run
# from this one image (packaging/kubernetes/).
#
#   docker build -t headroom .
#   docker run -d --name headroom -p 8443:8443 -v headroom-data:/var/lib/headroom \
#     -v /etc/headroom/tls:/etc/headroom/tls:ro --stop-timeout 25 headroom

FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libmicrohttpd-dev libcurl4-openssl-dev \
      libsqlite3-dev libjansson-dev libzmq3-dev libpcre2-dev libssl-dev libyaml-dev libpng-dev libjpeg-dev \
      nodejs npm ca-certificates help2man \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The dashboard's uPlot (web/package-lock.json) first, cached apart from the sources
COPY web/package.json web/package-lock.json web/
RUN cd web && npm ci --no-audit --no-fund --loglevel=error
COPY . .
# as make deb: Debian's hardening flags
ENV DEB_BUILD_MAINT_OPTIONS=hardening=+all
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
      -DCMAKE_C_FLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)" \
      -DCMAKE_EXE_LINKER_FLAGS="$(dpkg-buildflags --get LDFLAGS)" \
 && cmake --build /build -j "$(nproc)" --target headroomd headroom-worker headroom-agent headroom-mock headroom \
 && packaging/build-deb.sh /build /out \
 && mv /out/headroom_*.deb /out/headroom.deb

FROM debian:12-slim
COPY --from=build /out/headroom.deb /tmp/headroom.deb
# The package's postinst creates the system user headroom and /var/lib/headroom;
# tini is PID 1 (forwards SIGTERM, reaps), curl is the health check.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      /tmp/headroom.deb tini curl ca-certificates \
 && rm -rf /var/lib/apt/lists/* /tmp/headroom.deb
USER headroom
WORKDIR /var/lib/headroom
VOLUME ["/var/lib/headroom"]
EXPOSE 8443
# Beyond loopback headroomd requires TLS and tokens and refuses every target
# until --allow-target names some (docs/security.md): mount the PEM
# certificate and key at /etc/headroom/tls/ and give the command with your
# --allow-target entries, or replace it (for example --insecure-plaintext
# behind a TLS-terminating proxy, with
# HEADROOM_HEALTH_URL=http://127.0.0.1:PORT/api/v1/healthz).
ENV HEADROOM_HEALTH_URL=https://127.0.0.1:8443/api/v1/healthz
HEALTHCHECK --interval=30s --timeout=5s --retries=3 \
  CMD curl -fsS -k --max-time 4 -o /dev/null "$HEADROOM_HEALTH_URL" || exit 1
# headroomd's orderly stop takes up to 20 s: stop with a longer timeout (-t 25).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/bin/headroomd", "--data", "/var/lib/headroom"]
CMD ["--listen", "0.0.0.0:8443", "--tls-cert", "/etc/headroom/tls/cert.pem", \
     "--tls-key", "/etc/headroom/tls/key.pem"]
