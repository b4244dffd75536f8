import { Logger } from '@nestjs/common';

/**
 * The library logs through Nest's Logger, which prints every level when no app
 * configured it. A burst of 80,000 operations that fail would flood the run's
 * output; failures reach the report through the errors themselves.
 */
Logger.overrideLogger(false);
