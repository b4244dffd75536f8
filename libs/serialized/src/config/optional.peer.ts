import { SerializedConfigError } from './serialized-config.error';

/**
 * The one form in which a missing optional peer is reported, whichever it is
 * (`ioredis`, `pg`, `bullmq`, `@nestjs/terminus`, `@opentelemetry/api`): a
 * `SerializedConfigError` at start-up naming what needs the package, the package,
 * and the command that installs it.
 */
export function missingPeerError(feature: string, pkg: string, install: string = pkg): SerializedConfigError {
  return new SerializedConfigError([missingPeerProblem(feature, pkg, install)]);
}

/** The problem line of {@link missingPeerError}, for a start-up check that lists several. */
export function missingPeerProblem(feature: string, pkg: string, install: string = pkg): string {
  return `${feature} needs the optional peer dependency ${pkg}: npm install ${install}`;
}

/** Whether `error` says that `pkg` itself (not a module it loads) cannot be found. */
export function isMissingPackage(error: unknown, pkg: string): boolean {
  const { code, message } = (error ?? {}) as NodeJS.ErrnoException;
  return code === 'MODULE_NOT_FOUND' && String(message).includes(`'${pkg}'`);
}

/** Whether the library can load `pkg` (from its own folder, as its loaders do). */
export function canLoad(pkg: string): boolean {
  try {
    require.resolve(pkg);
    return true;
  } catch {
    return false;
  }
}
