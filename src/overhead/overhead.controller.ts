import { Controller, Param, Post } from '@nestjs/common';
import { Serialized } from 'nestjs-serialized';

/**
 * One trivial handler, undecorated and serialized, so the benchmarks can measure
 * what `@Serialized` itself costs per request (distinct ids or one hot id).
 */
@Controller('overhead')
export class OverheadController {
  @Post('plain/:id')
  plain(@Param('id') id: string) {
    return { id };
  }

  @Post('serialized/:id')
  @Serialized('id')
  serialized(@Param('id') id: string) {
    return { id };
  }
}
