# The FareSync worker image: a release build of `faresync` (Swift runtime linked statically) on
# Debian with librdkafka. docker-compose.yml builds and runs it.
FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends librdkafka-dev libsqlite3-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --static-swift-stdlib --product faresync \
    && cp "$(swift build -c release --show-bin-path)/faresync" /usr/local/bin/faresync

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends librdkafka1 libsqlite3-0 tzdata ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/faresync /usr/local/bin/faresync
VOLUME /data
EXPOSE 8080 9099
ENTRYPOINT ["faresync"]
CMD ["run", "--brokers", "kafka:9092", "--store", "sqlite:/data/faresync.sqlite", "--http-port", "8080", "--http-host", "0.0.0.0"]
