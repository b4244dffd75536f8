import { Module } from '@nestjs/common';
import { OverheadController } from './overhead.controller';

@Module({ controllers: [OverheadController] })
export class OverheadModule {}
